/**
 * Backfills through the real gateway: an environment whose pre-parser takes
 * `{deviceName, readings: [{t, p}]}` and makes one reading per element, measured at `t` (as a
 * device uploading what it buffered offline), and helpers to wait for everything to be processed.
 */
import type { Pipeline } from './pipeline.ts';
import { provisionComfort, queueIdle } from './pipeline.ts';
import { eventually } from './eventually.ts';

export const BACKFILL_PREPARSER = `function parsePayload(s) {
  const j = JSON.parse(s);
  return j.readings.map((r) => ({ deviceName: j.deviceName, time: r.t, payload: r.p }));
}`;

export interface BufferedReading {
  t: number;
  p: Record<string, number>;
}

/** Environment `env` with ComfortSensors devices, the backfill pre-parser, an API key and a token. */
export async function provisionBackfill(
  p: Pipeline,
  env: string,
  devices: string[],
): Promise<{ key: string; token: string }> {
  const { key } = await provisionComfort(p, env, devices);
  await p.admin.setPreparser(env, BACKFILL_PREPARSER, true);
  const { token } = await p.admin.createToken(env, 'backfill', 0);
  return { key, token };
}

/** Uploads `readings` of `device` in one submission; resolves once the gateway accepted it. */
export async function upload(
  p: Pipeline,
  key: string,
  device: string,
  readings: BufferedReading[],
): Promise<void> {
  const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: device, readings }));
  await res.arrayBuffer();
  if (res.status !== 202) throw new Error(`upload of ${device}: HTTP ${res.status}`);
}

/** Waits until every queued payload is processed and acknowledged. */
export async function processed(p: Pipeline, timeoutMs = 60_000): Promise<void> {
  await eventually(() => queueIdle(p), { timeoutMs, intervalMs: 50, message: 'the queue to be processed' });
}

/** A `sensors/*` call on the read API at `apiUrl`; the answer's data. */
export async function apiCall(apiUrl: string, token: string, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
  const json = (await res.json()) as { status: string; data?: unknown };
  if (json.status !== 'success') throw new Error(`${path}: ${JSON.stringify(json)}`);
  return json.data;
}
