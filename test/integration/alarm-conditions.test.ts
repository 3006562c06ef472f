/**
 * Rules that wait (`for`): a whole Vigil (gateway, worker, scheduler) whose steps and scheduler run
 * on a clock the test moves, so deadlines come when the test says and not a millisecond of waiting
 * is needed for them. Values carry their own measurement times through the backfill pre-parser.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { startDeviceTimers } from '../../src/scheduler/device-timers.ts';
import { queuedItems } from '../../src/queue/ingest-queue.ts';
import { PASS_THROUGH_PARSER, temperatureDefinition } from '../fixtures/definitions/temperature.ts';
import { BACKFILL_PREPARSER, processed, upload } from '../support/backfill.ts';
import { eventually } from '../support/eventually.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';
import { storedState } from '../support/state.ts';

const MIN = 60_000;
const quiet = createLogger('silent');

/** WARNING above 25 at once; CRITICAL above 30 once that has held for 10 minutes. */
const FREEZER = temperatureDefinition('Freezer', [
  { status: 'WARNING', above: 25 },
  { status: 'CRITICAL', above: 30, forMs: 10 * MIN, description: 'Overheating' },
]);

interface Event {
  id: string;
  deviceName: string;
  eventStatus: string;
  eventMessage: string;
  sensorValue: unknown;
}

/** A Vigil on a clock the test sets (`at`), with environment acme and devices of the Freezer definition. */
async function setup(devices: string[], roles = 'gateway,worker,scheduler') {
  // An hour ago, on a minute: measurement times stay in the past of the real clock too.
  const base = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
  let now = base;
  const clock = () => now;
  const p = await startPipeline({ roles, timerCheckMs: 50 }, { clock });
  await p.admin.createEnvironment('acme', 'en');
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, FREEZER, PASS_THROUGH_PARSER);
  await p.admin.setPreparser('acme', BACKFILL_PREPARSER, true);
  for (const name of devices) {
    await p.admin.createDevice('acme', { name, definitionName: 'Freezer', definitionIsPublic: false });
  }
  const { key } = await p.admin.createApiKey('acme', 'test');
  /** Posts values of `device` measured at `base + minutes`. */
  const send = (device: string, ...values: [minutes: number, temperature: number][]) =>
    upload(
      p,
      key,
      device,
      values.map(([m, t]) => ({ t: base + Math.round(m * MIN), p: { Temperature: t } })),
    );
  return {
    p,
    base,
    clock,
    send,
    at: (minutes: number) => {
      now = base + minutes * MIN;
    },
  };
}

async function events(p: Pipeline, device?: string): Promise<Event[]> {
  const all = (await p.redis.zrange(p.keys.envEvents('acme'), 0, -1)).map((j) => JSON.parse(j) as Event);
  return all.filter((e) => device === undefined || e.deviceName === device);
}

const messages = async (p: Pipeline, device: string) =>
  (await events(p, device)).map((e) => e.eventMessage).sort();

/** Waits until `device` has an event with `message`. */
const eventWith = (p: Pipeline, device: string, message: string) =>
  eventually(async () => (await messages(p, device)).includes(message), { message: `event "${message}"` });

/** Waits until the device has no timer set and the queue is idle: every tick applied. */
async function timersSettled(p: Pipeline, device: string): Promise<void> {
  await eventually(async () => (await p.redis.zscore(p.keys.deviceTimers(), `acme\n${device}`)) === null, {
    message: `the timer of ${device} to be gone`,
  });
  await processed(p);
}

const WARNING_31 = 'Temperature - Above 25 °C - WARNING - 31.0 °C';
const CRITICAL_31 = 'Temperature - Overheating for 10 min - CRITICAL - 31.0 °C';

describe('rules that wait (for)', () => {
  it('gives the immediate rule at once and the waiting one at its deadline, once, when no further value comes', async () => {
    const { p, base, send, at } = await setup(['f1']);
    await send('f1', [0, 31]);
    await eventWith(p, 'f1', WARNING_31);
    expect(await p.redis.zscore(p.keys.deviceTimers(), 'acme\nf1')).toBe(String(base + 10 * MIN));

    at(10);
    await eventWith(p, 'f1', CRITICAL_31);
    const point = (await storedState(p.redis, p.keys.deviceState('acme', 'f1'))).points.Temperature!;
    // The deadline is the data point's effective time; the status entered there.
    expect(point).toMatchObject({
      status: 'CRITICAL',
      updatedMs: base + 10 * MIN,
      statusSinceMs: base + 10 * MIN,
    });
    const critical = (await events(p, 'f1')).find((e) => e.eventStatus === 'CRITICAL')!;
    expect(critical).toMatchObject({ sensorValue: 31, id: `acme/f1/Temperature/${base + 10 * MIN}.t` });

    // A value measured before the deadline is history only now; a later one keeps CRITICAL.
    at(20);
    await send('f1', [9, 20], [15, 32]);
    await timersSettled(p, 'f1');
    expect(await messages(p, 'f1')).toEqual([WARNING_31, CRITICAL_31].sort());
    expect((await storedState(p.redis, p.keys.deviceState('acme', 'f1'))).points.Temperature).toMatchObject({
      status: 'CRITICAL',
      value: '32',
    });
  });

  it('does not enter the waiting rule when the condition breaks just before its deadline', async () => {
    const { p, send, at } = await setup(['f2']);
    await send('f2', [0, 31]);
    await eventWith(p, 'f2', WARNING_31);
    at(9); // the deadline is not due yet, and the value is no more than 5 minutes ahead
    await send('f2', [10 - 1 / MIN, 20]); // one millisecond before the deadline
    await eventWith(p, 'f2', 'Temperature - Returned to success status - SUCCESS - 20.0 °C');
    at(11);
    await timersSettled(p, 'f2');
    expect((await events(p, 'f2')).map((e) => e.eventStatus)).not.toContain('CRITICAL');
    expect(await events(p, 'f2')).toHaveLength(2);
  });

  it('takes away the timer of a deadline that a value reset or met just before it, rather than tick for nothing', async () => {
    const { p, base, send, at } = await setup(['f6', 'f7']);
    await send('f6', [0, 31]);
    await send('f7', [0, 31]);
    await eventWith(p, 'f6', WARNING_31);
    await eventWith(p, 'f7', WARNING_31);
    expect(await p.redis.zscore(p.keys.deviceTimers(), 'acme\nf6')).toBe(String(base + 10 * MIN));
    // Three seconds before the deadline, which the scheduler has not reached: f6's condition
    // breaks, f7's is met by a value measured at the deadline. Each step has a value of every data
    // point, so it knows the device has no other deadline.
    at(10 - 3 / 60);
    await send('f6', [9.9, 20]);
    await send('f7', [10, 33]);
    await eventWith(p, 'f6', 'Temperature - Returned to success status - SUCCESS - 20.0 °C');
    await eventWith(p, 'f7', 'Temperature - Overheating for 10 min - CRITICAL - 33.0 °C');
    expect(await p.redis.zscore(p.keys.deviceTimers(), 'acme\nf6')).toBeNull();
    expect(await p.redis.zscore(p.keys.deviceTimers(), 'acme\nf7')).toBeNull();
    expect((await storedState(p.redis, p.keys.deviceState('acme', 'f6'))).device['@tm']).toBeUndefined();
    expect(await events(p, 'f7')).toHaveLength(2);
  });

  it('enters the waiting rule at a later value that still meets the condition, before any tick', async () => {
    const { p, send, at } = await setup(['f3']);
    await send('f3', [0, 31]);
    await eventWith(p, 'f3', WARNING_31);
    at(9); // the deadline is not due for the scheduler yet
    await send('f3', [5, 31.5], [10, 33]);
    await eventWith(p, 'f3', 'Temperature - Overheating for 10 min - CRITICAL - 33.0 °C');
    expect(await events(p, 'f3')).toHaveLength(2);
  });

  it('applies a deadline that passed before a newer value first, with the value that held then', async () => {
    const { p, base, send, at } = await setup(['f4']);
    await send('f4', [0, 31]);
    await eventWith(p, 'f4', WARNING_31);
    at(9); // no tick yet: the value measured after the deadline comes first
    await send('f4', [12, 20]);
    await eventWith(p, 'f4', 'Temperature - Returned to success status - SUCCESS - 20.0 °C');
    expect(await messages(p, 'f4')).toEqual(
      [WARNING_31, CRITICAL_31, 'Temperature - Returned to success status - SUCCESS - 20.0 °C'].sort(),
    );
    const critical = (await events(p, 'f4')).find((e) => e.eventStatus === 'CRITICAL')!;
    expect(critical.id).toBe(`acme/f4/Temperature/${base + 10 * MIN}.t`);
  });

  it('shows a fired condition in /alarms/list', async () => {
    const { p, base, send, at } = await setup(['f5'], 'gateway,worker,scheduler,api');
    const { token } = await p.admin.createToken('acme', 'reader', 0);
    await send('f5', [0, 31]);
    await eventWith(p, 'f5', WARNING_31);
    at(10);
    await eventWith(p, 'f5', CRITICAL_31);
    const res = await fetch(`${p.apiUrl}/alarms/list`, { headers: { authorization: `Bearer ${token}` } });
    const alarms = ((await res.json()) as { data: Record<string, unknown>[] }).data;
    expect(alarms).toEqual([
      expect.objectContaining({
        deviceName: 'f5',
        sensorName: 'Temperature',
        status: 'CRITICAL',
        sinceUTC: new Date(base).toISOString(),
        acknowledged: false,
      }),
    ]);
  });

  it('fires each deadline once with two schedulers running', async () => {
    const devices = Array.from({ length: 20 }, (_, i) => `m${i}`);
    const { p, send, at, clock } = await setup(devices);
    const second = await startVigil({ ...p.config, roles: ['scheduler'] }, quiet, { clock });
    onTestFinished(() => second.close());
    for (const d of devices) await send(d, [0, 31]);
    await processed(p);
    at(10);
    for (const d of devices) await eventWith(p, d, CRITICAL_31);
    at(30);
    for (const d of devices) await send(d, [20, 32]);
    for (const d of devices) await timersSettled(p, d);
    for (const d of devices) expect(await messages(p, d)).toEqual([WARNING_31, CRITICAL_31].sort());
  });

  it('queues one tick per due timer whatever the number of schedulers', async () => {
    const { p } = await setup([], 'gateway');
    const members = Array.from({ length: 1200 }, (_, i) => `acme\nd${i}`);
    await p.redis.zadd(p.keys.deviceTimers(), ...members.flatMap((m, i) => [1000 + (i % 7), m]));
    const schedulers = [0, 1, 2].map(() =>
      startDeviceTimers({
        redis: p.redis,
        keys: p.keys,
        partitions: p.config.queuePartitions,
        log: quiet,
        intervalMs: 1000,
        clock: () => 5000,
        autoStart: false,
      }),
    );
    const queued = await Promise.all(schedulers.map((s) => s.tick()));
    expect(queued.reduce((a, b) => a + b, 0)).toBe(1200);
    const items = await queuedItems(p.redis, p.keys, p.config.queuePartitions);
    expect(items.map((i) => i.deviceName).sort()).toEqual(members.map((m) => m.split('\n')[1]).sort());
    expect(items.every((i) => i.gateway === 'timer')).toBe(true);
    expect(await p.redis.zcard(p.keys.deviceTimers())).toBe(0);
  });

  it('ends with the events of the in-order run when values measured after a deadline are processed before its tick', async () => {
    // In order: the scheduler runs while values come. Out of order: no scheduler until the end
    // (as after a restart of everything but the entries): values after the deadline come first.
    const inOrder = await setup(['o1']);
    await inOrder.send('o1', [0, 31]);
    await eventWith(inOrder.p, 'o1', WARNING_31);
    inOrder.at(10);
    await eventWith(inOrder.p, 'o1', CRITICAL_31);
    inOrder.at(13);
    await inOrder.send('o1', [11, 31.5], [12, 20]);
    await timersSettled(inOrder.p, 'o1');

    const late = await setup(['o1'], 'gateway,worker');
    await late.send('o1', [0, 31]);
    await eventWith(late.p, 'o1', WARNING_31);
    late.at(13);
    await late.send('o1', [11, 31.5], [12, 20]);
    await processed(late.p);
    const scheduler = await startVigil({ ...late.p.config, roles: ['scheduler'] }, quiet, {
      clock: late.clock,
    });
    onTestFinished(() => scheduler.close());
    await timersSettled(late.p, 'o1');

    // Event ids end in the measurement time: compare it relative to each run's start.
    const shape = (list: Event[], base: number) =>
      list
        .map(({ id, eventStatus, eventMessage, sensorValue }) => ({
          at: id.replace(
            /^.*\/(\d+)\.([^.]+)$/,
            (_, ms: string, rest: string) => `${Number(ms) - base}.${rest}`,
          ),
          eventStatus,
          eventMessage,
          sensorValue,
        }))
        .sort((a, b) => a.at.localeCompare(b.at));
    expect(shape(await events(late.p, 'o1'), late.base)).toEqual(
      shape(await events(inOrder.p, 'o1'), inOrder.base),
    );
    expect(await events(late.p, 'o1')).toHaveLength(3);
  });
});
