/**
 * Step 1 of processing: from queued submissions to readings, i.e. (device name, payloadStr,
 * measurement time). The environment's pre-parser decides where it is enabled or the gateway
 * demands it; otherwise the default rule (the body's `deviceName`, or the raw path's device name).
 */
import { MAX_FUTURE_MS, normalisePreparserResult } from '../domain/preparser-result.ts';
import { isNetworkServer, type IngestItem } from '../domain/ingest-item.ts';
import { readNetworkMessage } from '../domain/network-messages.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { Failures } from './failures.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { Reading } from './readings.ts';

export type { Reading } from './readings.ts';

function reading(
  item: IngestItem,
  deviceName: string,
  payloadStr: string,
  timeMs: number,
  deviceTime: boolean,
  index: number,
  direct: boolean,
): Reading {
  return {
    item,
    deviceName,
    payloadStr,
    timeMs,
    deviceTime,
    index,
    direct,
    device: null,
    definition: null,
    values: null,
  };
}

const ALWAYS_PREPARSER = new Set([
  'preparserfirst',
  'rawpreparserfirst',
  'preparseronly',
  'rawpreparseronly',
]);

interface PreparseDeps {
  catalog: Catalog;
  sandbox: Sandbox;
  outcomes: OutcomeLog;
  nowMs: number;
  /**
   * Readings measured before this (epoch ms) are refused (TIMESTAMP_BEYOND_RETENTION): raw
   * history would not keep them. Undefined: none is too old.
   */
  oldestMs?: number | undefined;
  /** A payload whose pre-parsing threw (the others go on). */
  failed: Failures['payload'];
}

/** Adds a reading to the step's, unless it is older than raw history keeps. */
type AddReading = (r: Reading) => void;

export async function preparse(items: IngestItem[], deps: PreparseDeps): Promise<Reading[]> {
  const { catalog, outcomes, oldestMs } = deps;
  const readings: Reading[] = [];
  const add: AddReading = (r) => {
    if (oldestMs === undefined || r.timeMs >= oldestMs) readings.push(r);
    else
      outcomes.problem(
        r.item,
        'TIMESTAMP_BEYOND_RETENTION',
        `time ${r.timeMs} (${new Date(r.timeMs).toISOString()}) is older than raw history keeps (VIGIL_RAW_RETENTION)`,
        r.deviceName,
      );
  };
  const viaPreparser = new Map<string, IngestItem[]>();
  // Each environment's pre-parser once, before the loop, which never awaits (see resolveDevices).
  const envs = [...new Set(items.map((i) => i.env))];
  const preparsers = new Map(
    await Promise.all(envs.map(async (env) => [env, await catalog.preparser(env)] as const)),
  );
  for (const item of items) {
    outcomes.seen(item);
    const pre = preparsers.get(item.env) ?? null;
    if (isNetworkServer(item.gateway)) readNetworkItem(item, add, deps);
    else if (!ALWAYS_PREPARSER.has(item.gateway) && !pre?.enabled) readDefault(item, add, deps);
    else if (!pre) outcomes.problem(item, 'NO_PREPARSER', 'the environment has no pre-parser');
    else {
      const list = viaPreparser.get(item.env) ?? [];
      list.push(item);
      viaPreparser.set(item.env, list);
    }
  }
  for (const [env, envItems] of viaPreparser) {
    const pre = preparsers.get(env);
    if (pre) runPreparser(env, pre, envItems, add, deps);
  }
  return readings;
}

/** A network server's message is read by Vigil, never by the environment's pre-parser. */
function readNetworkItem(item: IngestItem, add: AddReading, deps: PreparseDeps): void {
  try {
    const found = networkReading(item, deps.nowMs);
    if (found === NOT_DATA) return;
    if ('code' in found) deps.outcomes.problem(item, found.code, found.message, found.deviceName);
    else add(found);
  } catch (err) {
    deps.failed(item, null, err);
  }
}

/** A payload without a pre-parser: the default rule names its device. */
function readDefault(item: IngestItem, add: AddReading, deps: PreparseDeps): void {
  try {
    const found = defaultRule(item);
    if (typeof found !== 'string') deps.outcomes.problem(item, 'MISSING_DEVICE_NAME', found.problem);
    else add(reading(item, found, item.body, item.receivedMs, false, 0, false));
  } catch (err) {
    deps.failed(item, null, err);
  }
}

/** One sandbox call of an environment's pre-parser on its payloads of the step. */
function runPreparser(
  env: string,
  pre: { revision: number; source: string },
  envItems: IngestItem[],
  add: AddReading,
  deps: PreparseDeps,
): void {
  const { outcomes, nowMs } = deps;
  const results = deps.sandbox.run(
    { env, id: `pre:${env}`, revision: pre.revision, source: pre.source, filename: 'preparser.js' },
    envItems.map((i) => ({ payloadStr: i.body, payloadRaw: i.body })),
  );
  envItems.forEach((item, n) => {
    const result = results[n];
    if (!result) return;
    if (!result.ok) {
      outcomes.problem(item, result.code, `pre-parser: ${result.message}`);
      return;
    }
    try {
      const direct = item.gateway === 'preparseronly' || item.gateway === 'rawpreparseronly';
      normalisePreparserResult(result.value, item.receivedMs, nowMs).forEach((r, index) => {
        if (!r.ok) outcomes.problem(item, r.code, `pre-parser: ${r.message}`, r.deviceName);
        else add(reading(item, r.deviceName, r.payloadStr, r.timeMs, r.deviceTime, index, direct));
      });
    } catch (err) {
      deps.failed(item, null, err);
    }
  });
}

/** The default rule's device name (payloadStr is then the body), or why there is none. */
function defaultRule(item: IngestItem): string | { problem: string } {
  if (item.gateway === 'raw') {
    return item.deviceName
      ? item.deviceName
      : { problem: 'no device name (?deviceName= or raw/<KEY>/<deviceName>)' };
  }
  // The gateway read it while checking that the body is JSON; absent, the body has none (it was
  // accepted for a pre-parser that has been disabled since).
  return item.nameInBody ?? { problem: 'the JSON body has no string "deviceName"' };
}

/** A message queued as data that turned out not to be (the gateway already logged the others). */
const NOT_DATA = Symbol('not data');

/**
 * The reading of a network server's uplink or status report: the network server's device id as its
 * device name (resolveDevices also tries the DevEUI), its receive time as the measurement time.
 */
function networkReading(
  item: IngestItem,
  nowMs: number,
):
  | Reading
  | typeof NOT_DATA
  | { code: 'INVALID_NETWORK_MESSAGE' | 'FUTURE_TIMESTAMP'; message: string; deviceName?: string } {
  const message = readNetworkMessage(
    item.gateway as 'tts' | 'chirpstack',
    item.event,
    JSON.parse(item.body) as unknown,
  );
  if ('problem' in message) return { code: 'INVALID_NETWORK_MESSAGE', message: message.problem };
  if (message.kind === 'ignored') return NOT_DATA;
  if (message.recvTimeMs > nowMs + MAX_FUTURE_MS) {
    return {
      code: 'FUTURE_TIMESTAMP',
      message: `the network server's receive time ${message.recvTime} is more than 5 minutes ahead`,
      deviceName: message.deviceId,
    };
  }
  const r = reading(item, message.deviceId, message.bytesHex ?? '', message.recvTimeMs, true, 0, false);
  r.network = message;
  return r;
}
