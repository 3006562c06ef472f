/**
 * Fair parser CPU: an environment whose parsers use more than VIGIL_SANDBOX_CPU_SHARE of the
 * worker's time has its payloads processed after the other environments' in each step, and none of
 * them fails for it.
 */
import { describe, expect, it } from 'vitest';
import { COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, queueIdle, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';
import type { ProcessItems } from '../../src/worker/ingest-processor.ts';

/** Reports when it started (ms after the payload's `base`), after spending `spinMs` of CPU. */
const EVIL = `function parsePayload(s) {
  const j = JSON.parse(s);
  const started = Date.now();
  while (Date.now() - started < j.spinMs) {}
  return { Temperature: started - j.base, Humidity: 1 };
}`;
/** Reports when it ran (ms after the payload's `base`). */
const VICTIM = `function parsePayload(s) {
  const j = JSON.parse(s);
  return { Temperature: Date.now() - j.base, Humidity: 1 };
}`;

/** Holds the worker's next step until released, so that what is sent meanwhile forms one step. */
function holdable() {
  let held: Promise<void> | undefined;
  let release = () => {};
  let reached = () => {};
  return {
    wrap:
      (process: ProcessItems): ProcessItems =>
      async (items, step) => {
        if (held) {
          reached();
          await held;
        }
        return process(items, step);
      },
    /** Holds the next step; resolves once a step waits at the gate. */
    hold: () => {
      const waiting = new Promise<void>((resolve) => (reached = resolve));
      held = new Promise<void>((resolve) => (release = resolve));
      return waiting;
    },
    release: () => {
      held = undefined;
      release();
    },
  };
}

async function metric(p: Pipeline, name: string, env: string): Promise<number> {
  const text = await (await fetch(`${p.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{env="${env}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const temperatureOf = async (p: Pipeline, env: string, device: string) =>
  Number(await p.redis.hget(p.keys.deviceState(env, device), 'Temperature|v'));

describe('fair parser CPU', () => {
  it("processes an environment over its share after the others' in a step, failing none", async () => {
    const gate = holdable();
    const p = await startPipeline(
      {
        roles: 'gateway,worker',
        // One step loop and one partition: a step holds the queue's entries in acceptance order.
        workerConcurrency: 1,
        queuePartitions: 1,
        sandboxTimeoutMs: 2000,
        sandboxCpuShare: 0.02,
        sandboxCpuWindowMs: 10_000,
        catalogCacheMs: 0,
      },
      { wrapProcess: gate.wrap },
    );
    const evil = await provisionComfort(p, 'evil', ['e1']);
    const victim = await provisionComfort(p, 'victim', ['v1']);
    await p.admin.applyDefinition({ kind: 'private', env: 'evil' }, COMFORT_SPEC, EVIL);
    await p.admin.applyDefinition({ kind: 'private', env: 'victim' }, COMFORT_SPEC, VICTIM);
    const send = (key: string, device: string, body: object) =>
      p.post('gateway/submit', key, JSON.stringify({ deviceName: device, base: Date.now(), ...body }));

    // Evil's parsers take far more than 2 % of the worker's time until the worker says so.
    await eventually(
      async () => {
        expect((await send(evil.key, 'e1', { spinMs: 60 })).status).toBe(202);
        return (await metric(p, 'vigil_worker_env_slowed', 'evil')) === 1;
      },
      { timeoutMs: 30_000, message: 'evil marked as over its share' },
    );
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'queue drained' });

    // One step holding evil's payloads first in the queue, then victim's.
    const waiting = gate.hold();
    await send(evil.key, 'e1', { spinMs: 1 });
    await waiting;
    const base = Date.now();
    for (let i = 0; i < 3; i++) expect((await send(evil.key, 'e1', { base, spinMs: 40 })).status).toBe(202);
    expect((await send(victim.key, 'v1', { base })).status).toBe(202);
    gate.release();
    await eventually(() => queueIdle(p), { timeoutMs: 30_000, message: 'queue drained' });

    // Victim's parser ran before evil's last payloads started: evil's waited behind it.
    const victimRanAt = await temperatureOf(p, 'victim', 'v1');
    const evilStartedAt = await temperatureOf(p, 'evil', 'e1');
    expect(victimRanAt).toBeLessThanOrEqual(evilStartedAt);
    expect(await metric(p, 'vigil_worker_slowed_payloads_total', 'evil')).toBeGreaterThanOrEqual(3);
    // Slowed, never failed.
    const logged = (await p.redis.lrange(p.keys.ingestLog('evil'), 0, -1)).map((l) => readEntry(l));
    expect(logged.filter((e) => e.outcome !== 'accepted')).toEqual([]);
  });
});
