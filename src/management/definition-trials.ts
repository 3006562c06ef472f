/**
 * Definitions tried before they are published: a stored version or a draft (YAML + parser source)
 * run on one payload (Run), and a draft replayed over the recent payloads of the definition's
 * devices, each payload run through the published version too, answered as a diff (Replay). Both go
 * through the worker's own conversion (src/worker/definition-trial.ts) in the trial thread
 * (trial-runner.ts), never on the event loop, and are counted against the workbench limits
 * (trial-limits.ts) of their caller — a console session or an API token — and its environment.
 *
 * A replay takes at most MAX_REPLAY_PAYLOADS payloads, sampled evenly across the devices and, within
 * a device, across the time its recent payloads span. A payload that was shortened when kept is not
 * the payload the device sent: it is counted as skipped, not run.
 */
import { createHash } from 'node:crypto';
import type { DataValue, DefinitionSpec, Status } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { listRecentPayloads } from '../recent-payloads/list-recent-payloads.ts';
import type { RecentPayload } from '../recent-payloads/recent-payload-codec.ts';
import type { RecentPayloadKeys } from '../recent-payloads/recent-payload-keys.ts';
import type { Redis } from '../redis/connect.ts';
import type { DeviceSettings, TenancyStore } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { DefinitionTestReport, DefinitionTrialInput } from '../worker/definition-trial.ts';
import type { WorkbenchLimits } from './trial-limits.ts';
import type { TrialRunner } from './trial-runner.ts';

/** Most payloads one replay runs (each through the draft and the published version). */
export const MAX_REPLAY_PAYLOADS = 2000;
/** Longest payload a Run takes, in characters. */
export const MAX_TRIAL_PAYLOAD_CHARS = 256 * 1024;

/** What is run: a definition's spec and parser, and the sandbox's cache identity of that parser. */
export interface TrialCode {
  spec: DefinitionSpec;
  parserSource: string;
  /** ParserCode.id: one per definition and kind (a stored version, a draft). */
  codeId: string;
  /** ParserCode.revision: the version, or a number from the draft's text. */
  revision: number;
}

/** Who runs it: the environment, and the caller its limit is counted for (a session, a token). */
export interface TrialCaller {
  env: string;
  key: string;
}

/** A Run's answer: the workbench's report, and the line and column of the parser's error. */
export type RunReport = DefinitionTestReport & {
  /** The parser's file name the error's location names. */
  filename: string;
  line?: number;
  column?: number;
};

/** A data point as a replay compares it. */
export interface PointOutcome {
  value: DataValue | null;
  currentValue: string | null;
  status: Status | null;
}

/** A version's outcome on one payload, as a replay shows it. */
export type TrialOutcome =
  | { ok: true; dataPoints: Record<string, PointOutcome> }
  | { ok: false; code: string; message: string; line?: number; column?: number };

export type ReplayVerdict = 'fails' | 'succeeds' | 'status' | 'value' | 'same';

export interface ReplayChange {
  sensorName: string;
  then: PointOutcome | null;
  now: PointOutcome | null;
}

export interface ReplayRow {
  verdict: ReplayVerdict;
  deviceName: string;
  ingestId: string;
  receivedUTC: string;
  payload: string;
  /** The submission's body, when a pre-parser made `payload` of it. */
  raw?: string;
  /** What the published version makes of it. */
  then: TrialOutcome;
  /** What the draft makes of it. */
  now: TrialOutcome;
  /** Data points whose value or status differ. */
  changes: ReplayChange[];
}

export interface ReplayAnswer {
  definitionName: string;
  /** The published version the draft is compared with. */
  published: number;
  /** Devices of the definition, and how many of them had payloads replayed. */
  devices: number;
  devicesReplayed: number;
  /** Payloads kept in all (at most what was read), run, and skipped as shortened. */
  available: number;
  replayed: number;
  skipped: number;
  counts: Record<ReplayVerdict, number>;
  /** The payloads run, those that differ first (fails, succeeds, status, value), then the same. */
  rows: ReplayRow[];
}

export interface DefinitionTrialDeps {
  runner: TrialRunner;
  /** Runs per caller and environment; none: unlimited. */
  limits?: WorkbenchLimits | undefined;
  /**
   * Payloads a replay takes when it names no limit (at most MAX_REPLAY_PAYLOADS): the runs a caller
   * may make in a minute, so that a replay fits the limits it is counted against.
   */
  replayLimit?: number | undefined;
  store: Pick<
    TenancyStore,
    'getEnvironment' | 'getDefinition' | 'listDevices' | 'getDevice' | 'getDeviceSettings'
  >;
  redis: Redis;
  keys: RecentPayloadKeys;
}

export interface DefinitionTrials {
  /** Runs `code` on one payload, with `deviceName`'s threshold overrides when given. */
  run(
    caller: TrialCaller,
    code: TrialCode,
    payload: { payload: string; payloadRaw?: string | undefined; deviceName?: string | undefined },
  ): Promise<RunReport>;
  /** Runs `draft` and the published version of the private definition over its devices' recent payloads. */
  replay(caller: TrialCaller, draft: TrialCode, opts?: { limit?: number | undefined }): Promise<ReplayAnswer>;
}

/** The sandbox identity of a stored version of a definition. */
export const storedCode = (
  spec: DefinitionSpec,
  parserSource: string,
  isPublic: boolean,
  version: number,
): TrialCode => ({
  spec,
  parserSource,
  codeId: `trial:def:${isPublic ? 'public' : 'private'}:${spec.name}`,
  revision: version,
});

/** The sandbox identity of a draft: compiled again only when its parser changes. */
export const draftCode = (spec: DefinitionSpec, parserSource: string): TrialCode => ({
  spec,
  parserSource,
  codeId: `trial:draft:${spec.name}`,
  revision: Number.parseInt(createHash('sha256').update(parserSource).digest('hex').slice(0, 12), 16),
});

/** The parser's file name in messages: the definition's name. */
export const parserFilename = (spec: DefinitionSpec): string => `${spec.name}.js`;

/** The line and column a parser error's message names in `filename` (`… (at Name.js:3:11)`). */
export function errorLocation(
  message: string,
  filename: string,
): { line: number; column: number } | undefined {
  const at = message.lastIndexOf(`(at ${filename}:`);
  if (at < 0) return undefined;
  const m = /^(\d+):(\d+)\)/.exec(message.slice(at + filename.length + 5));
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

/** A kept payload that was not shortened (neither it nor the body it came from). */
export const isWhole = (p: RecentPayload): boolean =>
  p.payloadBytes === undefined && p.rawBytes === undefined && !p.hex;

/**
 * Up to `limit` of the devices' payloads (each device's newest first), spread evenly: every device
 * gets an equal share (a device with fewer payloads leaves its share to the others), and a device's
 * share is taken evenly across its list, oldest to newest; beyond `limit` devices, `limit` of them
 * evenly spaced, one payload each, its place in the list turning from device to device.
 */
export function samplePayloads<T>(lists: readonly (readonly T[])[], limit: number): T[][] {
  const n = lists.length;
  if (n === 0 || limit <= 0) return lists.map(() => []);
  if (n > limit) {
    const chosen = new Map<number, number>();
    for (let i = 0; i < limit; i++) chosen.set(Math.floor((i * n) / limit), i);
    return lists.map((list, d) => {
      const i = chosen.get(d);
      if (i === undefined || list.length === 0) return [];
      return [list[i % list.length] as T];
    });
  }
  // Shares: as much as each list has, up to an equal part of what is left, smallest lists first.
  const shares = new Array<number>(n).fill(0);
  let left = limit;
  const order = lists.map((l, i) => i).sort((a, b) => (lists[a]?.length ?? 0) - (lists[b]?.length ?? 0));
  order.forEach((d, k) => {
    const share = Math.min(lists[d]?.length ?? 0, Math.floor(left / (n - k)));
    shares[d] = share;
    left -= share;
  });
  // What rounding left over goes to lists that have more, one each.
  for (const d of order) {
    if (left === 0) break;
    if ((lists[d]?.length ?? 0) > (shares[d] ?? 0)) {
      shares[d] = (shares[d] ?? 0) + 1;
      left -= 1;
    }
  }
  return lists.map((list, d) => spread(list, shares[d] ?? 0));
}

/** `count` items of `list` at evenly spaced places, the first and the last included. */
function spread<T>(list: readonly T[], count: number): T[] {
  if (count >= list.length) return [...list];
  if (count <= 0) return [];
  if (count === 1) return [list[0] as T];
  return Array.from(
    { length: count },
    (_, i) => list[Math.round((i * (list.length - 1)) / (count - 1))] as T,
  );
}

const VERDICT_ORDER: readonly ReplayVerdict[] = ['fails', 'succeeds', 'status', 'value', 'same'];

/** Devices whose lists are read at once. */
const READ_CONCURRENCY = 64;

export function createDefinitionTrials(deps: DefinitionTrialDeps): DefinitionTrials {
  const { runner, store } = deps;

  async function localeOf(env: string) {
    return (await store.getEnvironment(env))?.locale ?? 'en';
  }

  const inputOf = (
    env: string,
    code: TrialCode,
    locale: 'en' | 'nl',
    payload: string,
    payloadRaw: string | undefined,
    settings: DeviceSettings | undefined,
  ): DefinitionTrialInput => ({
    env,
    spec: code.spec,
    parserSource: code.parserSource,
    parserFilename: parserFilename(code.spec),
    payload,
    ...(payloadRaw === undefined ? {} : { payloadRaw }),
    locale,
    ...(settings ? { settings } : {}),
    codeId: code.codeId,
    revision: code.revision,
  });

  return {
    async run(caller, code, p) {
      if (p.payload.length > MAX_TRIAL_PAYLOAD_CHARS || (p.payloadRaw?.length ?? 0) > MAX_TRIAL_PAYLOAD_CHARS)
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `The payload is longer than ${MAX_TRIAL_PAYLOAD_CHARS} characters.`,
        );
      let settings: DeviceSettings | undefined;
      if (p.deviceName !== undefined) {
        const device = await store.getDevice(caller.env, p.deviceName);
        if (!device)
          throw new AppError('DEVICE_NOT_FOUND', `This environment has no device ${p.deviceName}.`, {
            details: { deviceName: p.deviceName },
          });
        [settings] = await store.getDeviceSettings(caller.env, [p.deviceName]);
      }
      const locale = await localeOf(caller.env);
      await deps.limits?.take(caller.env, caller.key, 1);
      const [report] = await runner.run([
        inputOf(caller.env, code, locale, p.payload, p.payloadRaw, settings),
      ]);
      return located(report as DefinitionTestReport, parserFilename(code.spec));
    },

    async replay(caller, draft, opts = {}) {
      const limit = Math.max(
        1,
        Math.min(opts.limit ?? deps.replayLimit ?? MAX_REPLAY_PAYLOADS, MAX_REPLAY_PAYLOADS),
      );
      const name = draft.spec.name;
      const published = await store.getDefinition(caller.env, name, false);
      if (!published)
        throw new AppError('DEFINITION_NOT_FOUND', `This environment has no definition ${name}.`, {
          details: { definitionName: name },
        });
      const devices = (await store.listDevices(caller.env)).filter(
        (d) => d.definitionName === name && !d.definitionIsPublic,
      );
      const lists = await readLists(caller.env, devices, limit);
      const wholeLists = lists.map((l) => l.filter(isWhole));
      const available = lists.reduce((n, l) => n + l.length, 0);
      const skipped = available - wholeLists.reduce((n, l) => n + l.length, 0);
      const sampled = samplePayloads(wholeLists, limit);
      const picked: { device: DeviceRecord; payload: RecentPayload }[] = [];
      sampled.forEach((list, i) => {
        for (const payload of list) picked.push({ device: devices[i] as DeviceRecord, payload });
      });
      const usedDevices = devices.filter((_, i) => (sampled[i]?.length ?? 0) > 0);
      const [locale, settingsList] = await Promise.all([
        localeOf(caller.env),
        usedDevices.length > 0
          ? store.getDeviceSettings(
              caller.env,
              usedDevices.map((d) => d.deviceName),
            )
          : Promise.resolve([]),
      ]);
      const settingsOf = new Map(usedDevices.map((d, i) => [d.deviceName, settingsList[i]]));
      await deps.limits?.take(caller.env, caller.key, picked.length);
      const publishedCode = storedCode(published.spec, published.parserSource, false, published.version);
      const inputs: DefinitionTrialInput[] = [];
      for (const { device, payload } of picked) {
        const settings = settingsOf.get(device.deviceName);
        inputs.push(inputOf(caller.env, publishedCode, locale, payload.payload, payload.raw, settings));
        inputs.push(inputOf(caller.env, draft, locale, payload.payload, payload.raw, settings));
      }
      const reports = await runner.run(inputs);
      const rows = picked.map(({ device, payload }, i) =>
        compare(
          device.deviceName,
          payload,
          outcomeOf(reports[2 * i] as DefinitionTestReport, parserFilename(published.spec)),
          outcomeOf(reports[2 * i + 1] as DefinitionTestReport, parserFilename(draft.spec)),
        ),
      );
      rows.sort((a, b) => VERDICT_ORDER.indexOf(a.verdict) - VERDICT_ORDER.indexOf(b.verdict));
      const counts = Object.fromEntries(VERDICT_ORDER.map((v) => [v, 0])) as Record<ReplayVerdict, number>;
      for (const r of rows) counts[r.verdict] += 1;
      return {
        definitionName: name,
        published: published.version,
        devices: devices.length,
        devicesReplayed: usedDevices.length,
        available,
        replayed: rows.length,
        skipped,
        counts,
        rows,
      };
    },
  };

  /**
   * The recent payloads of the devices whose payloads can be sampled: all of them up to `limit`
   * devices, else the `limit` that sampling would choose (the others' lists are not read).
   */
  async function readLists(env: string, devices: DeviceRecord[], limit: number): Promise<RecentPayload[][]> {
    const n = devices.length;
    const wanted = new Set<number>();
    if (n > limit) for (let i = 0; i < limit; i++) wanted.add(Math.floor((i * n) / limit));
    const lists: RecentPayload[][] = devices.map(() => []);
    for (let start = 0; start < n; start += READ_CONCURRENCY) {
      const batch = devices.slice(start, start + READ_CONCURRENCY);
      await Promise.all(
        batch.map(async (d, j) => {
          const i = start + j;
          if (n > limit && !wanted.has(i)) return;
          lists[i] = await listRecentPayloads(deps.redis, deps.keys, env, d.deviceName);
        }),
      );
    }
    return lists;
  }
}

function located(report: DefinitionTestReport, filename: string): RunReport {
  if (report.ok) return { ...report, filename };
  const at = errorLocation(report.message, filename);
  return { ...report, filename, ...(at ?? {}) };
}

function outcomeOf(report: DefinitionTestReport, filename: string): TrialOutcome {
  if (!report.ok) {
    const at = errorLocation(report.message, filename);
    return { ok: false, code: report.code, message: report.message, ...(at ?? {}) };
  }
  const dataPoints: Record<string, PointOutcome> = Object.create(null) as Record<string, PointOutcome>;
  for (const p of report.dataPoints) {
    if (p.rawValue === null && p.currentStatus === null) continue;
    dataPoints[p.sensorName] = { value: p.rawValue, currentValue: p.currentValue, status: p.currentStatus };
  }
  return { ok: true, dataPoints };
}

function compare(deviceName: string, p: RecentPayload, then: TrialOutcome, now: TrialOutcome): ReplayRow {
  const base = {
    deviceName,
    ingestId: p.ingestId,
    receivedUTC: new Date(p.receivedMs).toISOString(),
    payload: p.payload,
    ...(p.raw === undefined ? {} : { raw: p.raw }),
    then,
    now,
  };
  if (then.ok && !now.ok) return { ...base, verdict: 'fails', changes: [] };
  if (!then.ok && now.ok) return { ...base, verdict: 'succeeds', changes: [] };
  if (!then.ok || !now.ok) return { ...base, verdict: 'same', changes: [] };
  const names = new Set([...Object.keys(then.dataPoints), ...Object.keys(now.dataPoints)]);
  const changes: ReplayChange[] = [];
  let status = false;
  for (const sensorName of names) {
    const a = then.dataPoints[sensorName] ?? null;
    const b = now.dataPoints[sensorName] ?? null;
    const sameStatus = (a?.status ?? null) === (b?.status ?? null);
    const sameValue =
      JSON.stringify(a?.value ?? null) === JSON.stringify(b?.value ?? null) &&
      (a?.currentValue ?? null) === (b?.currentValue ?? null);
    if (sameStatus && sameValue) continue;
    if (!sameStatus) status = true;
    changes.push({ sensorName, then: a, now: b });
  }
  const verdict: ReplayVerdict = changes.length === 0 ? 'same' : status ? 'status' : 'value';
  return { ...base, verdict, changes };
}
