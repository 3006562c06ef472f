/**
 * Writes history to InfluxDB: values and contacts into the raw policy, events into the long one.
 * Calls made while a write is in flight share the next request (group commit), split into
 * even requests of at most 5,000 lines sent together; a failure rejects every call it carried, so
 * their worker steps are retried. Points are a pure function of their input, so a retried or
 * replayed step overwrites the same points instead of adding new ones.
 */
import { sha256Hex } from '../lib/sha256.ts';
import { Counter, type Registry } from 'prom-client';
import type { DataType, DataValue, EventRecord, Status } from '../domain/types.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import type { InfluxClient } from './influx-client.ts';
import { CONTACTS, EVENTS, LONG_RP, RAW_RP, READINGS, severityOf } from './layout.ts';
import { createBatcher } from '../lib/batcher.ts';
import { escapeTag, formatLine, quoteFieldString, timestampNs, type FieldValue } from './line-protocol.ts';

/** One converted value of one data point. */
export interface ValuePoint {
  env: string;
  device: string;
  sensor: string;
  sensorType: string;
  dataType: DataType;
  /** Measurement time, epoch ms. */
  timeMs: number;
  /** Sub-millisecond offset 0..999,999 ns (the domain's valueOffsetNs): keeps same-ms values apart. */
  offsetNs: number;
  value: DataValue;
  status: Status;
}

/** One accepted payload: the device's contact (Grafana's "last contact"). */
export interface ContactPoint {
  env: string;
  device: string;
  timeMs: number;
  offsetNs: number;
}

export interface HistoryBatch {
  values: ValuePoint[];
  /** Value lines the caller built itself (valueLinePrefix, valueLineOf): the worker's hot path. */
  valueLines?: string[];
  events: EventRecord[];
  contacts: ContactPoint[];
}

export interface HistoryWriter {
  /** Writes the batch; resolves once InfluxDB has accepted every point, throws otherwise. */
  write(batch: HistoryBatch): Promise<void>;
  /** Waits for writes in flight; safe to call twice. */
  close(): Promise<void>;
}

/** A write that takes this long is logged (warn). */
const SLOW_WRITE_MS = 500;

/** Most lines per HTTP write (InfluxDB 1.x took ~115k points/s at 5,000-point batches here). */
export const MAX_LINES_PER_WRITE = 5000;
/** Most bytes per HTTP write, well under InfluxDB's default max-body-size of 25 MB. */
export const MAX_BYTES_PER_WRITE = 8 * 1024 * 1024;

export function createHistoryWriter(deps: {
  influx: InfluxClient;
  log: Logger;
  /** Longest a write may take before its callers hear it failed, in ms. */
  timeoutMs?: number;
  /** Where vigil_history_writes_total and vigil_history_lines_total are registered. */
  metrics?: Registry;
}): HistoryWriter {
  const counted = historyMetrics(deps.metrics);
  const slowWrite = sampledWarning(deps.log, 'slow InfluxDB write');
  // Group commit per retention policy: while a write is in flight, the lines of every caller
  // gather and go in the next one. InfluxDB spends a third of the CPU per line on 5,000-line
  // requests that it spends on 200-line ones (measured: 3.8 vs 8.5 µs), so concurrent worker
  // steps share requests instead of each sending its own.
  const batcherFor = (retentionPolicy: string) =>
    createBatcher<LineBlock>({
      write: async (blocks) => {
        const started = Date.now();
        const bodies = requestsOf(blocks);
        // Requests of one call go out together: InfluxDB handles them on its own threads.
        await Promise.all(
          bodies.map((body) => deps.influx.write(body, { precision: 'ns', retentionPolicy })),
        );
        const lines = blocks.reduce((n, b) => n + b.lines, 0);
        counted?.writes.inc({ rp: retentionPolicy }, bodies.length);
        counted?.lines.inc({ rp: retentionPolicy }, lines);
        const ms = Date.now() - started;
        // Slow writes delay acknowledgements and, past a few steps, state: operators should see them.
        if (ms >= SLOW_WRITE_MS) slowWrite({ ms, lines, retentionPolicy });
      },
      maxItems: 1000,
      maxDelayMs: 0,
      timeoutMs: deps.timeoutMs ?? 60_000,
      failure: (err) => (err instanceof Error ? err : new Error(String(err))),
      timeoutError: () => new Error('InfluxDB did not confirm the write in time'),
    });
  const raw = batcherFor(RAW_RP);
  const long = batcherFor(LONG_RP);
  let closing: Promise<void> | undefined;
  return {
    write(batch) {
      if (closing) return Promise.reject(new Error('history writer is closed'));
      const rawLines = batch.valueLines ?? [];
      for (const v of batch.values) rawLines.push(valueLine(v));
      for (const c of batch.contacts) {
        const line = contactLine(c);
        if (line !== undefined) rawLines.push(line);
      }
      const eventLines: string[] = [];
      for (const e of batch.events) {
        const line = eventLine(e);
        if (line !== undefined) eventLines.push(line);
      }
      const written = { lines: rawLines.length, events: eventLines.length };
      // Joined now, while the caller's lines are young, and nothing of `batch` is kept while the
      // request waits: a step's lines wait for InfluxDB as long as other steps take, and thousands
      // of small strings kept that long were copied by every young-generation collection and then
      // promoted to the old generation; one string per step is not.
      return Promise.all([
        rawLines.length > 0 ? raw.submit(blockOf(rawLines)) : undefined,
        eventLines.length > 0 ? long.submit(blockOf(eventLines)) : undefined,
      ]).then(() => deps.log.debug(written, 'history written'));
    },
    close() {
      closing ??= Promise.all([raw.close(), long.close()]).then(() => undefined);
      return closing;
    },
  };
}

/** Lines of one caller, joined: what the group commit collects. */
export interface LineBlock {
  text: string;
  lines: number;
}

export const blockOf = (lines: readonly string[]): LineBlock => ({
  text: lines.join('\n'),
  lines: lines.length,
});

/**
 * The request bodies for `blocks`: as few requests as MAX_LINES_PER_WRITE and MAX_BYTES_PER_WRITE
 * allow, of even size in lines (5,555 lines go as 2,778 + 2,777, not 5,000 + 555), split at line
 * ends; a part still over the byte limit (InfluxDB 1.x refuses bodies over its max-body-size, 25 MB
 * by default, which long string values could reach well before the line limit) is halved again.
 * A single line longer than the limit goes alone.
 */
export function requestsOf(blocks: readonly LineBlock[]): string[] {
  let lines = 0;
  let bytes = -1;
  for (const b of blocks) {
    lines += b.lines;
    bytes += byteSize(b.text) + 1;
  }
  const whole = blocks.length === 1 ? blocks[0]!.text : blocks.map((b) => b.text).join('\n');
  const count = Math.max(1, Math.ceil(lines / MAX_LINES_PER_WRITE), Math.ceil(bytes / MAX_BYTES_PER_WRITE));
  if (count === 1) return [whole];
  const bodies: string[] = [];
  const perPart = Math.ceil(lines / count);
  let start = 0;
  let n = 0;
  for (let nl = whole.indexOf('\n'); nl >= 0; nl = whole.indexOf('\n', nl + 1)) {
    if (++n < perPart) continue;
    bodies.push(...withinBytes(whole.slice(start, nl), perPart));
    start = nl + 1;
    n = 0;
  }
  bodies.push(...withinBytes(whole.slice(start), n + 1));
  return bodies;
}

/** `text` (of `lines` lines) as it is, or halved at a line end until every part is within MAX_BYTES_PER_WRITE. */
function withinBytes(text: string, lines: number): string[] {
  if (lines <= 1 || byteSize(text) <= MAX_BYTES_PER_WRITE) return [text];
  let cut = -1;
  for (let i = 0, at = -1; i < Math.floor(lines / 2); i++) cut = at = text.indexOf('\n', at + 1);
  const half = Math.floor(lines / 2);
  return [...withinBytes(text.slice(0, cut), half), ...withinBytes(text.slice(cut + 1), lines - half)];
}

/** Bytes of `text` in UTF-8, counted only when its upper bound (3 per UTF-16 unit) is over the limit. */
const byteSize = (text: string): number =>
  text.length * 3 <= MAX_BYTES_PER_WRITE ? text.length : Buffer.byteLength(text);

/**
 * Write requests and lines written, by retention policy: lines per request is what InfluxDB's CPU
 * per line depends on most (bench/influx-request-size.ts).
 */
function historyMetrics(registry: Registry | undefined) {
  if (!registry) return undefined;
  const counter = (name: string, help: string) =>
    (registry.getSingleMetric(name) as Counter<'rp'> | undefined) ??
    new Counter({ name, help, labelNames: ['rp'], registers: [registry] });
  return {
    writes: counter(
      'vigil_history_writes_total',
      'InfluxDB write requests that succeeded, by retention policy.',
    ),
    lines: counter('vigil_history_lines_total', 'Lines written to InfluxDB, by retention policy.'),
  };
}

/** The fields of a value by its data type: numbers and booleans in `value`, text, GPS. */
function valueFields(value: DataValue | number | null): Record<string, FieldValue | undefined> {
  if (value === null) return {};
  if (typeof value === 'number') return { value };
  if (typeof value === 'boolean') return { value: value ? 1 : 0 };
  if (typeof value === 'string') return { text: value };
  return { lat: value.lat, lon: value.lon };
}

/** `valueFields` as line protocol text ('' when there is nothing to write). */
export function valueFieldText(value: DataValue): string {
  if (typeof value === 'number') return Number.isFinite(value) ? `value=${value}` : '';
  if (typeof value === 'boolean') return value ? 'value=1' : 'value=0';
  if (typeof value === 'string') return `text=${quoteFieldString(value)}`;
  const parts: string[] = [];
  if (Number.isFinite(value.lat)) parts.push(`lat=${value.lat}`);
  if (Number.isFinite(value.lon)) parts.push(`lon=${value.lon}`);
  return parts.join(',');
}

/**
 * A value line up to its fields, the space before them included: the same for every value of one
 * data point, so the worker builds it once per device and step. Tags in InfluxDB's order (sorted
 * by key), empty ones left out, as formatLine does.
 */
export function valueLinePrefix(env: string, device: string, sensor: string, sensorType: string): string {
  if (env !== '' && device !== '' && sensor !== '' && sensorType !== '') {
    return `${READINGS},device=${escapeTag(device)},env=${escapeTag(env)},sensor=${escapeTag(sensor)},sensorType=${escapeTag(sensorType)} `;
  }
  const tags = [
    ['device', device],
    ['env', env],
    ['sensor', sensor],
    ['sensorType', sensorType],
  ].filter(([, v]) => v !== '');
  return `${READINGS}${tags.map(([k, v]) => `,${k}=${escapeTag(v!)}`).join('')} `;
}

/** The line of one value from its prefix (valueLinePrefix) and field text (valueFieldText). */
export function valueLineOf(
  prefix: string,
  fieldText: string,
  status: Status,
  timeMs: number,
  offsetNs: number,
): string {
  const fields = fieldText === '' ? '' : `${fieldText},`;
  return `${prefix}${fields}severity=${severityOf(status)}i ${timestampNs(timeMs, offsetNs)}`;
}

/** The line of one value (exported for tests and benchmarks). */
export function valueLine(p: ValuePoint): string {
  return valueLineOf(
    valueLinePrefix(p.env, p.device, p.sensor, p.sensorType),
    valueFieldText(p.value),
    p.status,
    p.timeMs,
    p.offsetNs,
  );
}

/** The line of one contact (same text as formatLine's). */
export function contactLine(c: ContactPoint): string | undefined {
  if (c.env === '' || c.device === '') {
    return formatLine(
      CONTACTS,
      { env: c.env, device: c.device },
      { seen: 1 },
      timestampNs(c.timeMs, c.offsetNs),
    );
  }
  return `${CONTACTS},device=${escapeTag(c.device)},env=${escapeTag(c.env)} seen=1 ${timestampNs(c.timeMs, c.offsetNs)}`;
}

/**
 * The line of one event. Its sub-millisecond offset is the one its step gave it, unique among the
 * device's events of that millisecond (event-record.ts), so no two share a point and a replay lands
 * on itself; an event stored without one takes it from a hash of its deterministic id.
 */
export function eventLine(e: EventRecord): string | undefined {
  const offsetNs = e.ns ?? Number.parseInt(sha256Hex(e.id).slice(0, 8), 16) % 1_000_000;
  return formatLine(
    EVENTS,
    { env: e.env, device: e.deviceName, category: e.eventCategory, status: e.eventStatus },
    {
      id: e.id,
      displayName: e.displayName,
      sensor: e.sensorName,
      sensorType: e.sensorType,
      ...valueFields(e.sensorValue),
      message: e.eventMessage,
    },
    timestampNs(e.receivedMs, offsetNs),
  );
}
