/**
 * A deadline outlives the worker that started it: a rule that waits (`for`) has begun to hold when
 * its worker is killed (SIGKILL) or paused past its lease (SIGSTOP); the scheduler queues the tick
 * into the device's partition when the deadline comes, and the partition's next owner applies it —
 * once, the paused worker's late steps being fenced off when it wakes. The scheduler's clock stands
 * still until the fault is in place, so the deadline cannot come — and its tick reach the first
 * worker — before the fault, however slow the machine.
 */
import { describe, expect, it } from 'vitest';
import { PASS_THROUGH_PARSER, temperatureDefinition } from '../fixtures/definitions/temperature.ts';
import { processed } from '../support/backfill.ts';
import { eventually } from '../support/eventually.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';
import { spawnVigil, type ChildVigil } from '../support/workers.ts';

const OVEN = temperatureDefinition('Oven', [
  { status: 'WARNING', above: 25 },
  { status: 'CRITICAL', above: 30, forMs: 1500, description: 'Overheating' },
]);
const CRITICAL = 'Temperature - Overheating for 1500 ms - CRITICAL - 31.0 °C';

async function setup() {
  let heldAtMs: number | undefined = Date.now();
  const p = await startPipeline(
    { roles: 'gateway,scheduler', timerCheckMs: 50, partitionLeaseMs: 1000 },
    { clock: () => heldAtMs ?? Date.now() },
  );
  await p.admin.createEnvironment('acme', 'en');
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, OVEN, PASS_THROUGH_PARSER);
  await p.admin.createDevice('acme', { name: 'o1', definitionName: 'Oven', definitionIsPublic: false });
  const { key } = await p.admin.createApiKey('acme', 'test');
  const send = async (temperature: number) => {
    const res = await p.post(
      'gateway/submit',
      key,
      JSON.stringify({ deviceName: 'o1', Temperature: temperature }),
    );
    expect(res.status).toBe(202);
  };
  const worker = async (): Promise<ChildVigil> => {
    const child = spawnVigil(
      p.config,
      { VIGIL_ROLES: 'worker', VIGIL_LOG_LEVEL: 'info' },
      { captureOutput: true },
    );
    await child.ports();
    return child;
  };
  /** A value above 30: WARNING at once, CRITICAL pending. */
  const warmedUp = async () => {
    await send(31);
    await eventually(async () =>
      (await messages(p)).includes('Temperature - Above 25 °C - WARNING - 31.0 °C'),
    );
  };
  /** The fault is in place: the scheduler's clock runs from now on. */
  const releaseClock = () => {
    heldAtMs = undefined;
  };
  return { p, send, worker, warmedUp, releaseClock };
}

const messages = async (p: Pipeline) =>
  (await p.redis.zrange(p.keys.envEvents('acme'), 0, -1)).map(
    (j) => (JSON.parse(j) as { eventMessage: string }).eventMessage,
  );

/** Waits until the device's deadline has come and its tick is queued (no longer in the timers set). */
const tickQueued = (p: Pipeline) =>
  eventually(async () => (await p.redis.zscore(p.keys.deviceTimers(), 'acme\no1')) === null, {
    message: 'the tick to be queued',
  });

describe('a deadline across worker faults', () => {
  it('is applied once by the next worker when the worker that started it was killed', async () => {
    const { p, send, worker, warmedUp, releaseClock } = await setup();
    const first = await worker();
    await warmedUp();
    await first.kill('SIGKILL');
    expect(await messages(p)).not.toContain(CRITICAL); // the rule was still waiting
    releaseClock();
    await tickQueued(p);
    const second = await worker();
    try {
      await eventually(async () => (await messages(p)).includes(CRITICAL));
      await send(32);
      await processed(p);
      expect((await messages(p)).filter((m) => m.includes('CRITICAL'))).toEqual([CRITICAL]);
    } finally {
      await second.kill();
    }
  });

  it('is applied once when the worker that started it was paused past its lease and wakes up after', async () => {
    const { p, send, worker, warmedUp, releaseClock } = await setup();
    const stalled = await worker();
    await warmedUp();
    stalled.process.kill('SIGSTOP');
    expect(await messages(p)).not.toContain(CRITICAL); // the rule was still waiting
    const other = await worker();
    releaseClock();
    try {
      await tickQueued(p);
      await eventually(async () => (await messages(p)).includes(CRITICAL), { timeoutMs: 30_000 });
      stalled.process.kill('SIGCONT');
      await send(32);
      await processed(p);
      expect((await messages(p)).filter((m) => m.includes('CRITICAL'))).toEqual([CRITICAL]);
    } finally {
      stalled.process.kill('SIGCONT');
      await Promise.all([stalled.kill(), other.kill()]);
    }
  });
});
