/**
 * The numbered-message generator of the fault runs (docs/guarantees.md): N payloads numbered 0..N-1, each
 * carrying its own measurement time (the pre-parser hands it on), sent over HTTP and MQTT like
 * devices would — a refused (503) or unanswered payload is counted and sent again, so a
 * redelivered copy must land on the same history point. Afterwards `verifyNumbered` looks for
 * gaps, duplicates and phantoms in InfluxDB and compares each device's current state with the
 * newest stored value.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt from 'mqtt';
import type { InfluxClient } from '../../src/history/influx-client.ts';
import type { Redis } from '../../src/redis/connect.ts';
import type { Keys } from '../../src/keys.ts';
import { decodePoint } from '../../src/state/point-record.ts';

/**
 * Pre-parser of the numbered runs: device, measurement time and number come from the body. CO2
 * cycles through 0, 1000 and 2000 with the number, so that with the thresholds of
 * NUMBERED_CO2_RULES a device's every value changes its status: each payload applied in order is one
 * state transition, and the checker can tell a missed or doubled one.
 */
export const NUMBERED_PREPARSER =
  'function parsePayload(s) { const j = JSON.parse(s); return { deviceName: j.deviceName, time: j.t, payload: { Illuminance: j.n, CO2: (j.n % 3) * 1000 } }; }';

/** The CO2 rules of the numbered runs: 0 SUCCESS, 1000 WARNING, 2000 CRITICAL. */
export const NUMBERED_CO2_RULES = [
  { status: 'WARNING', above: 500 },
  { status: 'CRITICAL', above: 1500 },
];

/** The status number n gives CO2 under NUMBERED_CO2_RULES. */
const numberedStatus = (n: number): string => ['SUCCESS', 'WARNING', 'CRITICAL'][n % 3]!;

/** The data point that carries the number (ComfortSensors' Illuminance: any number ≥ 0). */
export const NUMBERED_SENSOR = 'Illuminance';

export interface Numbered {
  n: number;
  device: string;
  timeMs: number;
  via: 'http' | 'mqtt';
}

export interface GeneratorCounts {
  /** Distinct numbered payloads the run tried to deliver. */
  sent: number;
  /** Payloads that got a 202 / PUBACK (at last). */
  acknowledged: number;
  /** 503 answers (BACKLOG_FULL / UNAVAILABLE); each refused payload was sent again. */
  refused: number;
  /** Attempts without an answer (connection refused or reset, timeout). */
  unanswered: number;
  /** Payloads never acknowledged before the run's deadline. */
  gaveUp: number;
  /** Any other status (must stay 0: a well-formed payload is never refused otherwise). */
  otherStatus: number;
}

export interface GeneratorOptions {
  /** Gateway base URL and API key; the payloads of every HTTP device go there. */
  http?: { url: string | (() => string); key: string };
  /** Broker URL and API key; the payloads of every MQTT device go there (QoS 1). */
  mqtt?: { url: string; key: string };
  /** Device names; the first half use HTTP, the rest MQTT (all HTTP without a broker). */
  devices: string[];
  count: number;
  /** Epoch ms of payload 0; payload n is measured at base + n × 10 ms. */
  baseTimeMs: number;
  /** Parallel HTTP requests (each device sends its own payloads one by one). */
  httpConcurrency?: number;
  /** Unacknowledged QoS 1 publishes in flight. */
  mqttWindow?: number;
  /** Gives up on a payload after this long (ms) without an acknowledgement. */
  deadlineMs?: number;
  /** Pause of each HTTP lane after an acknowledged payload, in ms (paces a run over time). */
  httpPauseMs?: number;
  /** Called after each acknowledgement with the number acknowledged so far. */
  onAck?: (acknowledged: number) => void | Promise<void>;
}

export interface GeneratorResult {
  counts: GeneratorCounts;
  acknowledged: Numbered[];
  all: Numbered[];
}

/** The body of payload n. */
export function numberedBody(m: Numbered): string {
  return JSON.stringify({ deviceName: m.device, t: m.timeMs, n: m.n });
}

/** Plans the run: payload n goes to device n mod D, measured at base + n × 10 ms. */
export function planNumbered(opts: GeneratorOptions): Numbered[] {
  const mqttFrom = opts.mqtt ? Math.ceil(opts.devices.length / 2) : opts.devices.length;
  return Array.from({ length: opts.count }, (_, n) => {
    const d = n % opts.devices.length;
    return {
      n,
      device: opts.devices[d]!,
      timeMs: opts.baseTimeMs + n * 10,
      via: d >= mqttFrom ? 'mqtt' : 'http',
    };
  });
}

/** Sends every planned payload until it is acknowledged (or the deadline passes). */
export async function sendNumbered(opts: GeneratorOptions): Promise<GeneratorResult> {
  const all = planNumbered(opts);
  const counts: GeneratorCounts = {
    sent: all.length,
    acknowledged: 0,
    refused: 0,
    unanswered: 0,
    gaveUp: 0,
    otherStatus: 0,
  };
  const acknowledged: Numbered[] = [];
  const acked = async (m: Numbered) => {
    acknowledged.push(m);
    counts.acknowledged += 1;
    await opts.onAck?.(counts.acknowledged);
  };
  const deadlineMs = opts.deadlineMs ?? 120_000;
  await Promise.all([
    sendHttp(
      opts,
      all.filter((m) => m.via === 'http'),
      counts,
      acked,
      deadlineMs,
    ),
    sendMqtt(
      opts,
      all.filter((m) => m.via === 'mqtt'),
      counts,
      acked,
      deadlineMs,
    ),
  ]);
  return { counts, acknowledged, all };
}

async function sendHttp(
  opts: GeneratorOptions,
  items: Numbered[],
  counts: GeneratorCounts,
  acked: (m: Numbered) => Promise<void>,
  deadlineMs: number,
): Promise<void> {
  const http = opts.http;
  if (!http || items.length === 0) return;
  const base = typeof http.url === 'string' ? () => http.url as string : http.url;
  const byDevice = new Map<string, Numbered[]>();
  for (const m of items) byDevice.set(m.device, [...(byDevice.get(m.device) ?? []), m]);
  const queues = [...byDevice.values()];
  const lanes = Math.min(opts.httpConcurrency ?? 8, queues.length);
  // Each lane owns some devices and sends their payloads in number order, one at a time.
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      const mine = queues.filter((_, i) => i % lanes === lane);
      const order = mine.flat().sort((a, b) => a.n - b.n);
      for (const m of order) {
        const giveUpAt = Date.now() + deadlineMs;
        for (;;) {
          const status = await postOnce(`${base()}/gateway/submit/${http.key}`, numberedBody(m));
          if (status >= 200 && status < 300) {
            await acked(m);
            if (opts.httpPauseMs) await sleep(opts.httpPauseMs);
            break;
          }
          if (status === 503) counts.refused += 1;
          else if (status === 0) counts.unanswered += 1;
          else counts.otherStatus += 1;
          if (Date.now() > giveUpAt) {
            counts.gaveUp += 1;
            break;
          }
          await sleep(status === 0 ? 200 : 50);
        }
      }
    }),
  );
}

/** The HTTP status of one POST, or 0 when no answer came. */
async function postOnce(url: string, body: string): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

async function sendMqtt(
  opts: GeneratorOptions,
  items: Numbered[],
  counts: GeneratorCounts,
  acked: (m: Numbered) => Promise<void>,
  deadlineMs: number,
): Promise<void> {
  const broker = opts.mqtt;
  if (!broker || items.length === 0) return;
  // A persistent session: unacknowledged QoS 1 publishes are sent again after each reconnect.
  const client = await mqtt.connectAsync(broker.url, {
    clientId: `numbered-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`,
    clean: false,
    reconnectPeriod: 200,
    connectTimeout: 5000,
    username: 'generator',
    password: broker.key,
  });
  client.on('error', () => undefined);
  client.on('offline', () => {
    counts.unanswered += 1;
  });
  const topic = `gateway/submit/${broker.key}`;
  const window = opts.mqttWindow ?? 50;
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: window }, async () => {
        while (next < items.length) {
          const m = items[next++]!;
          const giveUpAt = Date.now() + deadlineMs;
          for (;;) {
            // mqtt.js fails a publish it never sent (queued while replaying its in-flight ones after a
            // reconnect, when that connection closed too): a device sends it again.
            const outcome = await Promise.race([
              client.publishAsync(topic, numberedBody(m), { qos: 1 }).then(
                () => 'acked' as const,
                () => 'failed' as const,
              ),
              sleep(Math.max(0, giveUpAt - Date.now())).then(() => 'timeout' as const),
            ]);
            if (outcome === 'acked') {
              await acked(m);
              break;
            }
            if (outcome === 'failed' && Date.now() < giveUpAt) {
              counts.unanswered += 1;
              continue;
            }
            counts.gaveUp += 1;
            break;
          }
        }
      }),
    );
  } finally {
    await client.endAsync(true);
  }
}

export interface StoredCheck {
  /** Values of the numbered data point in history. */
  stored: number;
  /** Acknowledged numbers missing from history. */
  missing: number[];
  /** Numbers stored more than once. */
  duplicated: number[];
  /** Stored numbers that were never sent, or stored at another time than their own. */
  phantom: number[];
  /** Devices whose current value is not the newest stored one. */
  stateMismatches: string[];
  /**
   * State transitions that are doubled (one event id twice), or — for devices whose payloads were
   * sent one by one over HTTP, so accepted in measurement order — that differ from an in-order run
   * of the values stored.
   */
  transitionProblems: string[];
  /** Payloads in the dead-letter stream (filled in by the fault runs' settle). */
  deadLettered?: number;
  /** Processing steps refused by fencing (filled in by scenarios that read their workers' metrics). */
  fenced?: number;
}

/** Reads history and state of `env` and compares them with what the generator sent. */
export async function verifyNumbered(
  deps: { influx: InfluxClient; redis: Redis; keys: Keys },
  env: string,
  run: GeneratorResult,
): Promise<StoredCheck> {
  const [series] = await deps.influx.query(
    `SELECT "value" FROM "readings" WHERE "env" = '${env}' AND "sensor" = '${NUMBERED_SENSOR}'`,
  );
  const rows = (series?.[0]?.values ?? []) as [number, number][];
  const byN = new Map(run.all.map((m) => [m.n, m]));
  const seen = new Map<number, number>();
  const phantom: number[] = [];
  const newest = new Map<string, Numbered>();
  for (const [timeMs, n] of rows) {
    seen.set(n, (seen.get(n) ?? 0) + 1);
    const m = byN.get(n);
    if (!m || m.timeMs !== timeMs) {
      phantom.push(n);
      continue;
    }
    const cur = newest.get(m.device);
    if (!cur || cur.timeMs < m.timeMs) newest.set(m.device, m);
  }
  const stateMismatches: string[] = [];
  for (const [device, m] of newest) {
    const [value, packed] = await deps.redis.hmgetBuffer(
      deps.keys.deviceState(env, device),
      `${NUMBERED_SENSOR}|v`,
      `${NUMBERED_SENSOR}|p`,
    );
    const v = value?.toString();
    const u = packed ? decodePoint(packed)?.updatedMs : undefined;
    if (Number(v) !== m.n || u !== m.timeMs)
      stateMismatches.push(`${device}: state ${v}@${u}, newest stored ${m.n}@${m.timeMs}`);
  }
  return {
    stored: rows.length,
    missing: run.acknowledged.filter((m) => !seen.has(m.n)).map((m) => m.n),
    duplicated: [...seen].filter(([, c]) => c > 1).map(([n]) => n),
    phantom,
    stateMismatches,
    transitionProblems: await checkTransitions(deps, env, run, rows),
  };
}

/** The CO2 Sensors events of each device against the values stored (see StoredCheck). */
async function checkTransitions(
  deps: { redis: Redis; keys: Keys },
  env: string,
  run: GeneratorResult,
  rows: readonly [number, number][],
): Promise<string[]> {
  const byN = new Map(run.all.map((m) => [m.n, m]));
  const storedByDevice = new Map<string, Numbered[]>();
  for (const [, n] of rows) {
    const m = byN.get(n);
    if (m) storedByDevice.set(m.device, [...(storedByDevice.get(m.device) ?? []), m]);
  }
  const problems: string[] = [];
  for (const device of new Set(run.all.map((m) => m.device))) {
    const members = await deps.redis.zrange(deps.keys.deviceEvents(env, device), 0, -1);
    const events = members
      .map((json) => JSON.parse(json) as { id: string; sensorName: string; eventStatus: string })
      .filter((e) => e.sensorName === 'CO2');
    const ids = new Map<string, number>();
    for (const e of events) ids.set(e.id, (ids.get(e.id) ?? 0) + 1);
    for (const [id, count] of ids)
      if (count > 1) problems.push(`${device}: event ${id} created ${count} times`);
    const sent = run.all.filter((m) => m.device === device);
    if (sent.some((m) => m.via !== 'http')) continue;
    // An in-order run of the stored values: an event wherever the status changes (from SUCCESS).
    const stored = [...(storedByDevice.get(device) ?? [])].sort((a, b) => a.timeMs - b.timeMs);
    const expected: string[] = [];
    let status = 'SUCCESS';
    for (const m of stored) {
      const next = numberedStatus(m.n);
      if (next !== status) expected.push(`${m.timeMs}:${next}`);
      status = next;
    }
    const actual = events
      .map((e) => `${e.id.split('/').at(-1)!.split('.')[0]!}:${e.eventStatus}`)
      .sort((a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0]));
    if (actual.join() !== expected.join())
      problems.push(
        `${device}: ${actual.length} transitions, an in-order run gives ${expected.length}; first difference at ${firstDifference(actual, expected)}`,
      );
  }
  return problems;
}

function firstDifference(a: string[], b: string[]): string {
  const i = a.findIndex((x, k) => x !== b[k]);
  const at = i < 0 ? Math.min(a.length, b.length) : i;
  return `#${at}: ${a[at] ?? '—'} vs ${b[at] ?? '—'}`;
}

/** One line of the guarantees table: what a scenario sent, got acknowledged, stored and had refused. */
export function reportLine(scenario: string, run: GeneratorResult, check: StoredCheck): string {
  const c = run.counts;
  const fenced = check.fenced === undefined ? '' : `, fenced steps ${check.fenced}`;
  return `${scenario}: sent ${c.sent}, acknowledged ${c.acknowledged}, applied ${check.stored}${fenced}, dead-lettered ${check.deadLettered ?? 0}, refused (503) ${c.refused}, unanswered ${c.unanswered}, gave up ${c.gaveUp}`;
}
