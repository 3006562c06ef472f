/**
 * The fleet of an environment as the console shows it, a page at a time: each device with its
 * labels, its most severe current status, the data points that are not SUCCESS, its last contact
 * and whether it went silent; and the counts per status of the whole environment. What a page
 * costs follows what it shows (below, at readFleetSummary and readFleetPage); the console shares
 * one read per environment among its pages and clients (live.ts).
 */
import { formatValue } from '../domain/data-types.ts';
import {
  STATUSES,
  type DataPointSpec,
  type DefinitionSpec,
  type Locale,
  type RuleStatus,
  type Status,
} from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import { alarmStatusOfScore, decodeAlarmMember } from '../state/alarm-index.ts';
import { decodePoint, POINT_LAYOUT } from '../state/point-record.ts';
import { DEVICE_FIELD, type StateKeys } from '../state/state-keys.ts';
import { decodeSuppressed, pipelineValues } from '../tenancy/records.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import { scopeOf, type TenancyStore } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';

/** A data point of a device that is not SUCCESS. */
export interface FleetPoint {
  sensorName: string;
  displayName: string;
  status: Status;
  /** Epoch ms the status was entered, or null. */
  sinceMs: number | null;
  /** The current value as formatted, or null. */
  value: string | null;
  suppressed: boolean;
}

export interface FleetDevice {
  deviceName: string;
  displayName: string;
  definitionName: string;
  definitionIsPublic: boolean;
  /** Its labels by key (`site: amsterdam`); {} when none. */
  labels: Readonly<Record<string, string>>;
  /** Most severe status of its data points (suppressed ones left out) and of its silence; null before any data. */
  status: Status | null;
  lastContactMs: number | null;
  /** Its contact is lost (an Availability event is open). */
  silent: boolean;
  /** The status its definition gives a lost contact. */
  silentStatus: Status;
  /** Its data points that are not SUCCESS, most severe first. */
  problems: FleetPoint[];
}

/** Devices per status; `SILENT` and `NO_DATA` besides. */
export type FleetCounts = Record<Status | 'SILENT' | 'NO_DATA', number>;

export const severityOf = (status: Status | null): number =>
  status === null ? -1 : STATUSES.indexOf(status);

export function worseOf(a: Status | null, b: Status | null): Status | null {
  return severityOf(b) > severityOf(a) ? b : a;
}

const definitionKey = (d: Pick<DeviceRecord, 'definitionName' | 'definitionIsPublic'>) =>
  `${d.definitionIsPublic ? 'public' : 'private'}\n${d.definitionName}`;

async function readDefinitions(
  redis: Redis,
  keys: TenancyKeys,
  env: string,
  records: (DeviceRecord | null)[],
): Promise<Map<string, DefinitionSpec>> {
  const wanted = new Map<string, DeviceRecord>();
  for (const r of records) if (r) wanted.set(definitionKey(r), r);
  const list = [...wanted];
  if (list.length === 0) return new Map();
  const pipe = redis.pipeline();
  for (const [, r] of list)
    pipe.hget(keys.definition(scopeOf(env, r.definitionIsPublic), r.definitionName), 'spec');
  const texts = pipelineValues<string | null>(await pipe.exec());
  const out = new Map<string, DefinitionSpec>();
  list.forEach(([key], i) => {
    const text = texts[i];
    if (text) out.set(key, JSON.parse(text) as DefinitionSpec);
  });
  return out;
}

function fleetDevice(
  record: DeviceRecord,
  spec: DefinitionSpec | null,
  state: Record<string, Buffer>,
  suppressed: ReadonlyMap<string, number>,
  locale: Locale,
  nowMs: number,
): FleetDevice {
  const lc = state[DEVICE_FIELD.lastContact]?.toString();
  const lastContactMs = lc ? Number(lc) : null;
  const silent = state[DEVICE_FIELD.contactLost]?.toString() === '1';
  const silentStatus: Status = spec?.availability?.status ?? 'ERROR';
  const problems: FleetPoint[] = [];
  let status: Status | null = null;
  for (const dp of spec?.dataPoints ?? []) {
    const packed = state[`${dp.name}|p`];
    if (!packed) continue;
    if (packed[0] !== POINT_LAYOUT) {
      throw new AppError(
        'STATE_LAYOUT_UNKNOWN',
        `Data point ${dp.name} is stored in a layout this version cannot read.`,
      );
    }
    const point = decodePoint(packed);
    if (!point) continue;
    const until = suppressed.get(dp.name);
    const isSuppressed = until !== undefined && (until === 0 || until > nowMs);
    const pointStatus = point.status as Status;
    if (!isSuppressed) status = worseOf(status, pointStatus);
    if (pointStatus !== 'SUCCESS')
      problems.push(problemOf(dp, pointStatus, point.statusSinceMs, state, locale, isSuppressed));
  }
  if (silent) status = worseOf(status, silentStatus);
  else if (status === null && lastContactMs !== null) status = 'SUCCESS';
  problems.sort((a, b) => severityOf(b.status) - severityOf(a.status));
  return {
    deviceName: record.deviceName,
    displayName: record.displayName,
    definitionName: record.definitionName,
    definitionIsPublic: record.definitionIsPublic,
    labels: record.labels,
    status,
    lastContactMs,
    silent,
    silentStatus,
    problems,
  };
}

function problemOf(
  dp: DataPointSpec,
  status: Status,
  sinceMs: number | null,
  state: Record<string, Buffer>,
  locale: Locale,
  suppressed: boolean,
): FleetPoint {
  const json = state[`${dp.name}|v`]?.toString();
  let value: string | null = null;
  if (json !== undefined) {
    try {
      value = formatValue(dp.dataType, JSON.parse(json) as never, locale);
    } catch {
      value = null;
    }
  }
  return { sensorName: dp.name, displayName: dp.displayName, status, sinceMs, value, suppressed };
}

/*
 * The fleet page, paged: what it costs follows what it shows, not the environment's size.
 *
 * The summary (counts per status, and the order of the devices that need attention) comes from the
 * alarm index, which holds only open alarms, and from the sizes of the device list and of the set of
 * devices never heard from: one read of the index, two ZCARDs, and the suppressions of the devices
 * with a data point in alarm. A device's status is its worst open alarm's, its suppressed data
 * points left out, as the full read does; a device whose every alarm is suppressed is SUCCESS.
 *
 * A page lists the devices that need attention first (most severe, then by name), then every other
 * device by name, from the device list or a label index (`pageDevices`); only the page's devices'
 * records, state and suppressions are read. Pages are keyset pages: a cursor is the device a page
 * starts after (or ends before) and, among the devices that need attention, the status it is listed
 * at, so a device changing status moves between pages but never shows twice on one.
 */

/** A device with an open alarm that counts (not suppressed), or whose contact is lost. */
export interface AttentionDevice {
  deviceName: string;
  status: Status;
  silent: boolean;
}

export interface FleetSummary {
  env: string;
  locale: Locale;
  /** Devices in the environment's device list. */
  total: number;
  counts: FleetCounts;
  /** Most severe first, then by device name. */
  attention: readonly AttentionDevice[];
  attentionOf: ReadonlyMap<string, AttentionDevice>;
  readMs: number;
}

export async function readFleetSummary(
  redis: Redis,
  keys: TenancyKeys & StateKeys,
  env: string,
  nowMs: number,
): Promise<FleetSummary> {
  const [index, total, unheard, localeText] = pipelineValues<unknown>(
    await redis
      .pipeline()
      .zrange(keys.alarmIndex(env), 0, -1, 'WITHSCORES')
      .zcard(keys.devices(env))
      .zcard(keys.unheardDevices(env))
      .hget(keys.env(env), 'locale')
      .exec(),
  ) as [string[], number, number, string | null];
  const alarms = new Map<string, { sensors: string[]; statuses: RuleStatus[]; lost: RuleStatus | null }>();
  for (let i = 0; i < index.length; i += 2) {
    const { device, sensor } = decodeAlarmMember(index[i] ?? '');
    const status = alarmStatusOfScore(Number(index[i + 1]));
    let a = alarms.get(device);
    if (!a) {
      a = { sensors: [], statuses: [], lost: null };
      alarms.set(device, a);
    }
    if (sensor === null) a.lost = status;
    else {
      a.sensors.push(sensor);
      a.statuses.push(status);
    }
  }
  const names = [...alarms.keys()];
  const suppressed = new Map<string, (string | null)[]>();
  let exists: (string | null)[] = [];
  if (names.length > 0) {
    // Which of them are devices still (an alarm a deleted device's last step wrote is not one), and
    // the suppressions of their data points in alarm.
    const pipe = redis.pipeline().zmscore(keys.devices(env), ...names);
    const withSensors = names.filter((n) => (alarms.get(n)?.sensors.length ?? 0) > 0);
    for (const n of withSensors) pipe.hmget(keys.deviceSuppressed(env, n), ...(alarms.get(n)?.sensors ?? []));
    const replies = pipelineValues<(string | null)[]>(await pipe.exec());
    exists = replies[0] ?? [];
    withSensors.forEach((n, i) => suppressed.set(n, replies[i + 1] ?? []));
  }
  const attention: AttentionDevice[] = [];
  names.forEach((deviceName, i) => {
    const a = alarms.get(deviceName);
    if (!a || exists[i] === null || exists[i] === undefined) return;
    const until = suppressed.get(deviceName) ?? [];
    let status: Status | null = null;
    a.statuses.forEach((s, j) => {
      const u = until[j];
      const isSuppressed = u !== null && u !== undefined && (Number(u) === 0 || Number(u) > nowMs);
      if (!isSuppressed) status = worseOf(status, s);
    });
    status = worseOf(status, a.lost);
    if (status !== null) attention.push({ deviceName, status, silent: a.lost !== null });
  });
  attention.sort(compareAttention);
  const counts: FleetCounts = {
    SUCCESS: 0,
    INFO: 0,
    WARNING: 0,
    ERROR: 0,
    CRITICAL: 0,
    SILENT: 0,
    NO_DATA: unheard,
  };
  for (const a of attention) {
    counts[a.status] += 1;
    if (a.silent) counts.SILENT += 1;
  }
  counts.SUCCESS = Math.max(0, total - attention.length - unheard);
  return {
    env,
    locale: localeText === 'nl' ? 'nl' : 'en',
    total,
    counts,
    attention,
    attentionOf: new Map(attention.map((a) => [a.deviceName, a])),
    readMs: nowMs,
  };
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The page order of two cursors: the statuses listed at (none: after every status), then names. */
function compareCursors(a: FleetCursor, b: FleetCursor): number {
  return severityOf(b.at ?? null) - severityOf(a.at ?? null) || byName(a.name, b.name);
}

const compareAttention = (a: AttentionDevice, b: AttentionDevice) =>
  compareCursors({ name: a.deviceName, at: a.status }, { name: b.deviceName, at: b.status });

/**
 * Where a page starts after or ends before: a device, and the status it is listed at when it is
 * among those that need attention (absent: among the others, listed by name).
 */
export interface FleetCursor {
  name: string;
  at?: Status | undefined;
}

export interface FleetQuery {
  status?: Status | 'SILENT' | 'NO_DATA' | undefined;
  /** Text the device's names, definition or labels hold (case-insensitive). */
  q?: string | undefined;
  /** Every one of these labels. */
  labels?: Readonly<Record<string, string>> | undefined;
  /** The page starts after this device… */
  after?: FleetCursor | undefined;
  /** …or ends before this one. */
  before?: FleetCursor | undefined;
  limit: number;
}

export interface FleetPage {
  summary: FleetSummary;
  /** In page order. */
  devices: FleetDevice[];
  /** Whether it starts at the beginning of the list. */
  first: boolean;
  /** Devices may precede the page: the previous one ends before this (its first device). */
  previous?: FleetCursor | undefined;
  /** Devices may follow the page: the next one starts after this. */
  next?: FleetCursor | undefined;
  /**
   * The search (or filter) looked at its most devices for one page before the page was full: it
   * went as far as this device, and `next` (`previous` for a page backwards) goes on from there.
   */
  searchedTo?: string | undefined;
}

/**
 * Devices a page looks at, at most, beyond those it shows: a search reads the devices' records to
 * match their display names, definitions and labels, and a status filter (SUCCESS) skips those
 * without data — bounded, so that a search of 100,000 devices costs a page what 2,000 cost.
 */
export const FLEET_SCAN_LIMIT = 2000;

export interface FleetPageDeps {
  redis: Redis;
  keys: TenancyKeys & StateKeys;
  tenancy: Pick<TenancyStore, 'pageDevices' | 'getDevices'>;
}

export function recordMatches(d: DeviceRecord, q: FleetQuery): boolean {
  for (const [k, v] of Object.entries(q.labels ?? {}))
    if (!Object.hasOwn(d.labels, k) || d.labels[k] !== v) return false;
  if (q.q === undefined) return true;
  const text = `${d.displayName}\n${d.deviceName}\n${d.definitionName}${Object.entries(d.labels)
    .map(([k, v]) => `\n${k}=${v}`)
    .join('')}`.toLowerCase();
  return text.includes(q.q.toLowerCase());
}

/** Devices of the summary's attention list that the query's status asks for. */
function attentionOfStatus(summary: FleetSummary, status: FleetQuery['status']): readonly AttentionDevice[] {
  if (status === undefined) return summary.attention;
  if (status === 'SUCCESS' || status === 'NO_DATA') return [];
  if (status === 'SILENT') return summary.attention.filter((a) => a.silent);
  return summary.attention.filter((a) => a.status === status);
}

const restAsked = (status: FleetQuery['status']) =>
  status === undefined || status === 'SUCCESS' || status === 'NO_DATA';

interface Listed {
  record: DeviceRecord;
  attention: AttentionDevice | undefined;
}

const cursorOf = (l: Listed): FleetCursor => ({ name: l.record.deviceName, at: l.attention?.status });

export async function readFleetPage(
  deps: FleetPageDeps,
  summary: FleetSummary,
  query: FleetQuery,
  nowMs: number,
): Promise<FleetPage> {
  const page = query.before ? await pageBackwards(deps, summary, query, query.before) : undefined;
  const { listed, first, previous, next, searchedTo } =
    page ?? (await pageForwards(deps, summary, query, query.after));
  return {
    summary,
    devices: await readRows(deps, summary, listed, nowMs),
    first,
    previous,
    next,
    searchedTo,
  };
}

interface Paged {
  listed: Listed[];
  first: boolean;
  previous?: FleetCursor | undefined;
  next?: FleetCursor | undefined;
  searchedTo?: string | undefined;
}

/** The attention devices the query asks for, with their records (in attention order). */
async function attentionListed(
  deps: FleetPageDeps,
  summary: FleetSummary,
  query: FleetQuery,
  keep: (a: AttentionDevice) => boolean,
  take: (list: AttentionDevice[]) => AttentionDevice[],
): Promise<{ listed: Listed[]; left: number }> {
  const wanted = attentionOfStatus(summary, query.status).filter(keep);
  // A search or label filter reads the records of every device that needs attention (few), to
  // match them; otherwise only those of the page.
  const filtering = query.q !== undefined || query.labels !== undefined;
  const candidates = filtering ? wanted : take(wanted);
  const records = await deps.tenancy.getDevices(
    summary.env,
    candidates.map((a) => a.deviceName),
  );
  const matched: Listed[] = [];
  candidates.forEach((a, i) => {
    const record = records[i];
    if (record && recordMatches(record, query)) matched.push({ record, attention: a });
  });
  if (!filtering) return { listed: matched, left: wanted.length - candidates.length };
  const kept = new Set(take(matched.map((m) => m.attention as AttentionDevice)));
  return {
    listed: matched.filter((m) => kept.has(m.attention as AttentionDevice)),
    left: matched.length - kept.size,
  };
}

async function pageForwards(
  deps: FleetPageDeps,
  summary: FleetSummary,
  query: FleetQuery,
  after: FleetCursor | undefined,
): Promise<Paged> {
  const limit = query.limit;
  const inAttention = after === undefined || after.at !== undefined;
  const { listed, left } = inAttention
    ? await attentionListed(
        deps,
        summary,
        query,
        (a) => after === undefined || compareCursors({ name: a.deviceName, at: a.status }, after) > 0,
        (list) => list.slice(0, limit),
      )
    : { listed: [], left: 0 };
  const previous = after === undefined ? undefined : listed[0] ? cursorOf(listed[0]) : undefined;
  if (left > 0 || !restAsked(query.status)) {
    const last = listed.at(-1);
    return {
      listed,
      first: after === undefined,
      previous,
      next: left > 0 && last ? cursorOf(last) : undefined,
    };
  }
  const want = limit - listed.length;
  const rest = await walkRest(deps, summary, query, inAttention ? undefined : after?.name, want, false);
  const shown = rest.records.slice(0, want).map((record) => ({ record, attention: undefined }));
  const all = [...listed, ...shown];
  const last = all.at(-1);
  const next =
    rest.stoppedAt !== undefined && rest.records.length <= want
      ? { name: rest.stoppedAt }
      : rest.records.length > want && last
        ? cursorOf(last)
        : undefined;
  return {
    listed: all,
    first: after === undefined,
    previous: after === undefined ? undefined : all[0] ? cursorOf(all[0]) : undefined,
    next,
    searchedTo: rest.records.length <= want ? rest.stoppedAt : undefined,
  };
}

async function pageBackwards(
  deps: FleetPageDeps,
  summary: FleetSummary,
  query: FleetQuery,
  before: FleetCursor,
): Promise<Paged | undefined> {
  const limit = query.limit;
  let shown: Listed[] = [];
  if (before.at === undefined && restAsked(query.status)) {
    const rest = await walkRest(deps, summary, query, before.name, limit, true);
    // Nearest first: the page is the `limit` nearest, in page order.
    shown = rest.records
      .slice(0, limit)
      .reverse()
      .map((record) => ({ record, attention: undefined }));
    if (rest.records.length > limit || rest.stoppedAt !== undefined) {
      const last = shown.at(-1);
      return {
        listed: shown,
        first: false,
        previous:
          rest.records.length > limit && shown[0]
            ? cursorOf(shown[0])
            : rest.stoppedAt !== undefined
              ? { name: rest.stoppedAt }
              : undefined,
        next: last ? cursorOf(last) : before,
        searchedTo: rest.records.length > limit ? undefined : rest.stoppedAt,
      };
    }
  }
  const want = limit - shown.length;
  const { listed, left } = await attentionListed(
    deps,
    summary,
    query,
    (a) => before.at === undefined || compareCursors({ name: a.deviceName, at: a.status }, before) < 0,
    (list) => list.slice(Math.max(0, list.length - want)),
  );
  const all = [...listed, ...shown];
  const last = all.at(-1);
  // Back at the start of the list: the first page, whole (read forwards when what precedes changed
  // and it holds fewer devices now).
  if (left === 0)
    return all.length < limit
      ? undefined
      : { listed: all, first: true, next: last ? cursorOf(last) : before };
  return {
    listed: all,
    first: false,
    previous: all[0] ? cursorOf(all[0]) : undefined,
    next: last ? cursorOf(last) : before,
  };
}

/**
 * The devices that need no attention and match the query, by name after `from` (before it, nearest
 * first, when `backwards`): up to `want` + 1, so that the caller knows whether more follow, looking
 * at FLEET_SCAN_LIMIT devices at most (`stoppedAt`: the last one looked at, when it stopped there).
 */
async function walkRest(
  deps: FleetPageDeps,
  summary: FleetSummary,
  query: FleetQuery,
  from: string | undefined,
  want: number,
  backwards: boolean,
): Promise<{ records: DeviceRecord[]; stoppedAt?: string }> {
  const out: DeviceRecord[] = [];
  let seen = 0;
  let cursor = from;
  for (;;) {
    const size = Math.min(query.q === undefined ? want + 1 - out.length : 500, FLEET_SCAN_LIMIT - seen);
    const batch = await restBatch(deps, summary.env, query, cursor, size, backwards);
    seen += batch.seen;
    let kept = batch.devices.filter((d) => !summary.attentionOf.has(d.deviceName) && recordMatches(d, query));
    if (query.status === 'SUCCESS' && kept.length > 0) {
      const unheard = await deps.redis.zmscore(
        deps.keys.unheardDevices(summary.env),
        ...kept.map((d) => d.deviceName),
      );
      kept = kept.filter((_, i) => unheard[i] === null);
    }
    for (const d of kept) {
      out.push(d);
      if (out.length > want) return { records: out };
    }
    if (batch.last === undefined) return { records: out };
    cursor = batch.last;
    if (seen >= FLEET_SCAN_LIMIT) return { records: out, stoppedAt: cursor };
  }
}

/**
 * Up to `size` devices by name after `from` (before it, nearest first, when `backwards`) with the
 * query's labels: of the environment (`pageDevices`) or, for NO_DATA, of those never heard from.
 * `last`: the name to go on from, undefined at the end.
 */
async function restBatch(
  deps: FleetPageDeps,
  env: string,
  query: FleetQuery,
  from: string | undefined,
  size: number,
  backwards: boolean,
): Promise<{ devices: DeviceRecord[]; seen: number; last: string | undefined }> {
  if (query.status !== 'NO_DATA') {
    const page = await deps.tenancy.pageDevices(env, {
      limit: size,
      ...(from === undefined ? {} : backwards ? { before: from } : { after: from }),
      ...(query.labels ? { labels: query.labels } : {}),
    });
    const devices = backwards ? page.devices.reverse() : page.devices;
    return { devices, seen: devices.length, last: page.more ? devices.at(-1)?.deviceName : undefined };
  }
  const key = deps.keys.unheardDevices(env);
  const names = backwards
    ? await deps.redis.zrevrangebylex(key, from === undefined ? '+' : `(${from}`, '-', 'LIMIT', 0, size + 1)
    : await deps.redis.zrangebylex(key, from === undefined ? '-' : `(${from}`, '+', 'LIMIT', 0, size + 1);
  const batch = names.slice(0, size);
  const records = await deps.tenancy.getDevices(env, batch);
  return {
    devices: records.filter((r): r is DeviceRecord => r !== null),
    seen: batch.length,
    last: names.length > size ? batch.at(-1) : undefined,
  };
}

/** The rows of a page: its devices' state and suppressions, and their definitions, read. */
async function readRows(
  deps: FleetPageDeps,
  summary: FleetSummary,
  listed: readonly Listed[],
  nowMs: number,
): Promise<FleetDevice[]> {
  if (listed.length === 0) return [];
  const { redis, keys } = deps;
  const env = summary.env;
  const pipe = redis.pipeline();
  for (const { record } of listed) {
    pipe.hgetallBuffer(keys.deviceState(env, record.deviceName));
    pipe.hgetall(keys.deviceSuppressed(env, record.deviceName));
  }
  const replies = pipelineValues<unknown>(await pipe.exec());
  const definitions = await readDefinitions(
    redis,
    keys,
    env,
    listed.map((l) => l.record),
  );
  return listed.map(({ record, attention }, i) => {
    const spec = definitions.get(definitionKey(record)) ?? null;
    const state = replies[2 * i] as Record<string, Buffer>;
    const suppressed = decodeSuppressed(replies[2 * i + 1] as Record<string, string>);
    const device = fleetDevice(record, spec, state, suppressed, summary.locale, nowMs);
    // The status the summary counts and orders it by: its worst open alarm's (the same as its
    // state's but for an alarm of a data point its definition no longer has).
    return attention ? { ...device, status: attention.status } : device;
  });
}
