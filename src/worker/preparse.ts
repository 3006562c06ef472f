/**
 * Step 1 of processing: from queued submissions to readings, i.e. (device name, payloadStr,
 * measurement time). The environment's pre-parser decides where it is enabled or the gateway
 * demands it; otherwise the default rule (the body's `deviceName`, or the raw path's device name).
 */
import { normalisePreparserResult } from '../domain/preparser-result.ts';
import type { IngestItem } from '../queue/jobs.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { Catalog } from './catalog.ts';
import type { OutcomeLog } from './outcomes.ts';

export interface Reading {
  item: IngestItem;
  deviceName: string;
  /** What the definition parser receives as payloadStr. */
  payloadStr: string;
  /** Measurement time, epoch ms. */
  timeMs: number;
  /** The device (pre-parser) supplied the time; history is then exactly-once. */
  deviceTime: boolean;
  /** Position among the readings the pre-parser made of one submission. */
  index: number;
  /** preparseronly gateways: payloadStr is already the data point map (no definition parser). */
  direct: boolean;
}

const ALWAYS_PREPARSER = new Set([
  'preparserfirst',
  'rawpreparserfirst',
  'preparseronly',
  'rawpreparseronly',
]);

export async function preparse(
  items: IngestItem[],
  deps: { catalog: Catalog; sandbox: Sandbox; outcomes: OutcomeLog; nowMs: number },
): Promise<Reading[]> {
  const { catalog, sandbox, outcomes, nowMs } = deps;
  const readings: Reading[] = [];
  const viaPreparser = new Map<string, IngestItem[]>();
  // Each environment's pre-parser once, before the loop, which never awaits (see resolveDevices).
  const envs = [...new Set(items.map((i) => i.env))];
  const preparsers = new Map(
    await Promise.all(envs.map(async (env) => [env, await catalog.preparser(env)] as const)),
  );
  for (const item of items) {
    outcomes.seen(item);
    const pre = preparsers.get(item.env) ?? null;
    if (ALWAYS_PREPARSER.has(item.gateway) || pre?.enabled) {
      if (!pre) {
        outcomes.problem(item, 'NO_PREPARSER', 'the environment has no pre-parser');
        continue;
      }
      const list = viaPreparser.get(item.env) ?? [];
      list.push(item);
      viaPreparser.set(item.env, list);
      continue;
    }
    const found = defaultRule(item);
    if ('problem' in found) outcomes.problem(item, 'MISSING_DEVICE_NAME', found.problem);
    else
      readings.push({ item, ...found, timeMs: item.receivedMs, deviceTime: false, index: 0, direct: false });
  }
  for (const [env, envItems] of viaPreparser) {
    const pre = preparsers.get(env);
    if (!pre) continue;
    const results = sandbox.run(
      { id: `pre:${env}`, revision: pre.revision, source: pre.source, filename: 'preparser.js' },
      envItems.map((i) => ({ payloadStr: i.body, payloadRaw: i.body })),
    );
    envItems.forEach((item, n) => {
      const result = results[n];
      if (!result) return;
      if (!result.ok) {
        outcomes.problem(item, result.code, `pre-parser: ${result.message}`);
        return;
      }
      normalisePreparserResult(result.value, item.receivedMs, nowMs).forEach((r, index) => {
        if (!r.ok) {
          outcomes.problem(item, r.code, `pre-parser: ${r.message}`, r.deviceName);
          return;
        }
        readings.push({
          item,
          deviceName: r.deviceName,
          payloadStr: r.payloadStr,
          timeMs: r.timeMs,
          deviceTime: r.deviceTime,
          index,
          direct: item.gateway === 'preparseronly' || item.gateway === 'rawpreparseronly',
        });
      });
    });
  }
  return readings;
}

function defaultRule(item: IngestItem): { deviceName: string; payloadStr: string } | { problem: string } {
  if (item.gateway === 'raw') {
    return item.deviceName
      ? { deviceName: item.deviceName, payloadStr: item.body }
      : { problem: 'no device name (?deviceName= or raw/<KEY>/<deviceName>)' };
  }
  try {
    const parsed: unknown = JSON.parse(item.body);
    const name =
      typeof parsed === 'object' && parsed !== null
        ? (parsed as Record<string, unknown>).deviceName
        : undefined;
    if (typeof name === 'string' && name.length > 0) return { deviceName: name, payloadStr: item.body };
    return { problem: 'the JSON body has no string "deviceName"' };
  } catch {
    return { problem: 'the body is not valid JSON' };
  }
}
