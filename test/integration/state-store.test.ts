import { describe, expect, it, onTestFinished } from 'vitest';
import { connectRedis, closeRedis } from '../../src/redis/connect.ts';
import { createKeys } from '../../src/keys.ts';
import {
  createStateStore,
  type DeviceApplied,
  type DeviceReadings,
  type StateValue,
} from '../../src/state/state-store.ts';
import { encodePoint } from '../../src/state/point-record.ts';
import { testConfig } from '../support/context.ts';
import { storedState } from '../support/state.ts';

/** The error name of a device the script refused, or what came instead. */
const refusal = (applied: DeviceApplied | undefined): unknown =>
  applied && !Array.isArray(applied) ? applied.refused.name : applied;

function setup() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command');
  onTestFinished(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  return { redis, keys, state: createStateStore({ redis, keys, eventsCap: 1000 }) };
}

// Rules: 0 = WARNING above 25, 1 = CRITICAL above 30; outcomes precomputed as the domain would,
// with hysteresis 1 (WARNING held while > 24, CRITICAL held while > 29).
function outcomesFor(v: number): number[] {
  const fresh = v > 30 ? 1 : v > 25 ? 0 : -1;
  const held = (prev: number) => {
    if (prev === 1 && v > 29) return 1;
    if (prev === 0 && v > 24) return Math.max(fresh, 0);
    return fresh;
  };
  return [fresh, held(0), held(1)];
}

function reading(values: [number, number][], contactMs = 0): DeviceReadings {
  return {
    env: 'e1',
    device: 'd1',
    displayName: 'Device one',
    contactMs,
    timeoutMs: 60_000,
    sensors: new Map([
      [
        'Temperature',
        {
          statuses: ['WARNING', 'CRITICAL'],
          descriptions: ['Above 25 °C', 'Overheating'],
          rulesId: 'r1',
          suppressed: false,
          sensorType: 'tempC',
        },
      ],
    ]),
    values: values.map(([timeMs, v]): StateValue => ({
      sensor: 'Temperature',
      timeMs,
      offsetNs: 0,
      valueJson: JSON.stringify(v),
      currentValue: `${v.toFixed(1)} °C`,
      outcomes: outcomesFor(v),
      receivedMs: 0,
      number: v,
    })),
  };
}

describe('state store', () => {
  it('applies values in time order, with events on status changes and hysteresis', async () => {
    const { redis, keys, state } = setup();
    const series: [number, number][] = [20, 26, 24.5, 31, 29.5, 28, 20].map((v, i) => [1000 + i, v]);
    const applied = await state.applyReadings([reading(series, 5000)], 9000);
    expect(applied[0]).toEqual([
      'SUCCESS',
      'WARNING',
      'WARNING',
      'CRITICAL',
      'CRITICAL',
      'WARNING',
      'SUCCESS',
    ]);
    const events = (await redis.zrange(keys.envEvents('e1'), 0, -1)).map(
      (j) => JSON.parse(j) as Record<string, unknown>,
    );
    expect(events.map((e) => e.eventMessage)).toEqual(
      expect.arrayContaining([
        'Temperature - Above 25 °C - WARNING - 26.0 °C',
        'Temperature - Overheating - CRITICAL - 31.0 °C',
        'Temperature - Above 25 °C - WARNING - 28.0 °C',
        'Temperature - Returned to success status - SUCCESS - 20.0 °C',
      ]),
    );
    expect(events).toHaveLength(4);
    const s = await storedState(redis, keys.deviceState('e1', 'd1'));
    expect(s.points.Temperature).toEqual({
      value: '20',
      updatedMs: 1006,
      offsetNs: 0,
      rule: -1,
      rulesId: 'r1',
      status: 'SUCCESS',
      lastSuccessMs: 1006,
      statusSinceMs: 1006,
      hour: { hour: 0, count: 7, total: 179, min: 20, max: 31, late: false },
      receivedMs: 0,
      held: [],
      shownValue: '',
    });
    expect(s.device).toEqual({ '@lc': '5000', '@to': '60000', '@dl': '65000' });
    expect(await redis.zscore(keys.availabilityDeadlines(), 'e1\nd1')).toBe('65000');
    expect(await redis.xlen(keys.eventOutbox())).toBe(4);
  });

  it('keeps the newest measurement: older values and replays change nothing', async () => {
    const { redis, keys, state } = setup();
    await state.applyReadings([reading([[2000, 31]])], 1);
    const again = await state.applyReadings(
      [
        reading([
          [2000, 31],
          [1500, 20],
        ]),
      ],
      2,
    );
    expect(again[0]).toEqual([null, null]);
    const s = await storedState(redis, keys.deviceState('e1', 'd1'));
    expect(s.points.Temperature).toMatchObject({ value: '31', updatedMs: 2000, status: 'CRITICAL' });
    expect(await redis.zcard(keys.envEvents('e1'))).toBe(1);
  });

  it('creates one Availability event per lost contact, whoever asks twice, and a restore on contact', async () => {
    const { redis, keys, state } = setup();
    await state.applyReadings([reading([], 1000)], 1000);
    const deadline = Number(await redis.zscore(keys.availabilityDeadlines(), 'e1\nd1'));
    const ev = JSON.stringify({ id: 'x', eventCategory: 'Availability' });
    const results = await Promise.all([
      state.markContactLost('e1', 'd1', deadline, ev, 70_000),
      state.markContactLost('e1', 'd1', deadline, ev, 70_000),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    await state.applyReadings([reading([], 80_000)], 80_000);
    const events = (await redis.zrange(keys.envEvents('e1'), 0, -1)).map(
      (j) => JSON.parse(j) as Record<string, unknown>,
    );
    expect(events.map((e) => e.eventStatus ?? e.eventCategory)).toEqual(['Availability', 'SUCCESS']);
    expect(events[1]!.eventMessage).toBe(
      'availability - Contact restored - SUCCESS - 1970-01-01T00:01:20.000Z',
    );
    expect(await redis.zscore(keys.availabilityDeadlines(), 'e1\nd1')).toBe('140000');
  });

  it('moves a deadline to the last contact when it comes due, and marks lost only past that', async () => {
    const { redis, keys, state } = setup();
    const deadline = () => redis.zscore(keys.availabilityDeadlines(), 'e1\nd1');
    await state.applyReadings([reading([], 1000)], 1000);
    expect(await deadline()).toBe('61000');
    // Later contact does not rewrite the deadline (one ZADD per timeout period, not per step) …
    await state.applyReadings([reading([], 2000)], 2000);
    await state.applyReadings([reading([], 3000)], 3000);
    expect(await deadline()).toBe('61000');
    // … the scheduler, finding contact since, moves it to last contact + timeout instead.
    expect(await state.markContactLost('e1', 'd1', 61_000, '{}', 61_500)).toBe(false);
    expect(await deadline()).toBe('63000');
    expect(await redis.hget(keys.deviceState('e1', 'd1'), '@lost')).toBeNull();
    // A scheduler that read the old score finds nothing to do.
    expect(await state.markContactLost('e1', 'd1', 61_000, '{}', 64_000)).toBe(false);
    expect(await state.markContactLost('e1', 'd1', 63_000, '{}', 64_000)).toBe(true);
    expect(await deadline()).toBeNull();
    expect(await redis.hget(keys.deviceState('e1', 'd1'), '@lost')).toBe('1');
    // Contact again: a deadline at once.
    await state.applyReadings([reading([], 90_000)], 90_000);
    expect(await deadline()).toBe('150000');
  });

  it('moves due entries in one pipeline, and never marks a device lost while doing so', async () => {
    const { redis, keys, state } = setup();
    await state.applyReadings([reading([], 1000)], 1000);
    await state.applyReadings([reading([], 5000)], 5000);
    const due = [{ env: 'e1', device: 'd1', deadlineMs: 61_000 }];
    expect(await state.moveDeadlines(due, 61_500)).toBe(1);
    expect(await redis.zscore(keys.availabilityDeadlines(), 'e1\nd1')).toBe('65000');
    // Past the real deadline, an entry is left for markContactLost: moving never creates an event.
    expect(await state.moveDeadlines([{ ...due[0]!, deadlineMs: 65_000 }], 70_000)).toBe(0);
    expect(await redis.zscore(keys.availabilityDeadlines(), 'e1\nd1')).toBe('65000');
    expect(await redis.zcard(keys.envEvents('e1'))).toBe(0);
  });

  it('brings a deadline forward at once for a shorter timeout, and drops it for timeout 0', async () => {
    const { redis, keys, state } = setup();
    const deadline = () => redis.zscore(keys.availabilityDeadlines(), 'e1\nd1');
    await state.applyReadings([reading([], 1000)], 1000);
    await state.applyReadings([{ ...reading([], 2000), timeoutMs: 10_000 }], 2000);
    expect(await deadline()).toBe('12000');
    // A longer timeout waits for the scheduler, which moves the deadline out.
    await state.applyReadings([{ ...reading([], 3000), timeoutMs: 100_000 }], 3000);
    expect(await deadline()).toBe('12000');
    expect(await state.markContactLost('e1', 'd1', 12_000, '{}', 12_500)).toBe(false);
    expect(await deadline()).toBe('103000');
    // Not monitored any more: the entry goes when it comes due, without an event.
    await state.applyReadings([{ ...reading([], 4000), timeoutMs: 0 }], 4000);
    expect(await state.markContactLost('e1', 'd1', 103_000, '{}', 200_000)).toBe(false);
    expect(await deadline()).toBeNull();
    expect(await redis.zcard(keys.envEvents('e1'))).toBe(0);
  });

  it('marks lost at the entry written by an earlier version (no @to yet) as before', async () => {
    const { redis, keys, state } = setup();
    await state.applyReadings([reading([], 1000)], 1000);
    await redis.hdel(keys.deviceState('e1', 'd1'), '@to', '@dl');
    expect(await state.markContactLost('e1', 'd1', 61_000, '{}', 61_500)).toBe(true);
  });
});

describe('state store: the current hour of each data point', () => {
  const H = 3_600_000;
  /** The kept hour as [hour, count, total, min, max, late], null when none is kept. */
  const hourOf = async (redis: ReturnType<typeof setup>['redis'], keys: ReturnType<typeof setup>['keys']) => {
    const h = (await storedState(redis, keys.deviceState('e1', 'd1'))).points.Temperature?.hour;
    return h ? [h.hour, h.count, h.total, h.min, h.max, h.late ? 1 : 0] : null;
  };

  it('sums the values that became current in their clock hour, starting over in a new hour', async () => {
    const { redis, keys, state } = setup();
    const two = reading([
      [10 * H + 1, 20.1],
      [10 * H + 2, 0.2],
    ]);
    await state.applyReadings([two], 11 * H);
    await state.applyReadings([reading([[10 * H + 3, -3]])], 11 * H);
    // Summed in time order as doubles: the same float InfluxDB's sum() gives.
    expect(await hourOf(redis, keys)).toEqual([10, 3, 20.1 + 0.2 + -3, -3, 20.1, 0]);
    await state.applyReadings([reading([[11 * H, 5]])], 11 * H);
    expect(await hourOf(redis, keys)).toEqual([11, 1, 5, 5, 5, 0]);
  });

  it('counts a repeated or an older value no more, and marks its hour for InfluxDB to answer', async () => {
    const { redis, keys, state } = setup();
    const batch = reading([
      [10 * H + 5, 1],
      [10 * H + 6, 2],
    ]);
    await state.applyReadings([batch], 11 * H);
    expect(await hourOf(redis, keys)).toEqual([10, 2, 3, 1, 2, 0]);
    await state.applyReadings([batch], 11 * H);
    expect(await hourOf(redis, keys)).toEqual([10, 2, 3, 1, 2, 1]);
    // A new hour starts unmarked; an older value of an earlier hour leaves it so.
    await state.applyReadings([reading([[11 * H + 1, 4]])], 12 * H);
    await state.applyReadings([reading([[10 * H + 4, 100]])], 12 * H);
    expect(await hourOf(redis, keys)).toEqual([11, 1, 4, 4, 4, 0]);
  });

  it('keeps no hour for values without a number (text, GPS)', async () => {
    const { redis, keys, state } = setup();
    const text = reading([[10 * H, 1]]);
    text.values = text.values.map((v) => ({ ...v, valueJson: '"open"', number: null }));
    await state.applyReadings([text], 11 * H);
    expect(await hourOf(redis, keys)).toBeNull();
    expect(await redis.hget(keys.deviceState('e1', 'd1'), 'Temperature|v')).toBe('"open"');
  });

  it('refuses packed state of a layout it does not know, writing nothing of the device', async () => {
    const { redis, keys, state } = setup();
    await redis.hset(keys.deviceState('e1', 'd1'), 'Temperature|p', '10 1 5 5 5');
    await expect(state.applyReadings([reading([[10 * H + 1, 7]])], 11 * H)).rejects.toMatchObject({
      code: 'STATE_LAYOUT_UNKNOWN',
    });
    expect(await redis.hgetall(keys.deviceState('e1', 'd1'))).toEqual({ 'Temperature|p': '10 1 5 5 5' });
  });

  it('reads back what encodePoint writes, as the read side decodes what the script writes', async () => {
    const { redis, keys, state } = setup();
    const seeded = encodePoint({
      updatedMs: 10 * H,
      offsetNs: 0,
      rule: 1,
      rulesId: 'r1',
      status: 'CRITICAL',
      lastSuccessMs: null,
      statusSinceMs: 10 * H,
      hour: { hour: 10, count: 1, total: 35, min: 35, max: 35, late: false },
      receivedMs: null,
      held: [],
      shownValue: '',
    });
    await redis.hset(keys.deviceState('e1', 'd1'), 'Temperature|p', seeded);
    // 29.5 holds CRITICAL through hysteresis only if the stored rule (1) is read back.
    const [applied] = await state.applyReadings([reading([[10 * H + 1, 29.5]])], 11 * H);
    expect(applied).toEqual(['CRITICAL']);
    expect((await storedState(redis, keys.deviceState('e1', 'd1'))).points.Temperature).toMatchObject({
      lastSuccessMs: null,
      statusSinceMs: 10 * H,
      hour: { hour: 10, count: 2, total: 64.5, min: 29.5, max: 35, late: false },
    });
  });

  it('works with data points and devices named like Object.prototype members', async () => {
    const { redis, keys, state } = setup();
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const meta = reading([]).sensors.get('Temperature')!;
    const devices = names.map((device, d): DeviceReadings => ({
      ...reading([]),
      device,
      sensors: new Map(names.map((n) => [n, meta])),
      values: names.map((sensor, i) => ({ ...reading([[1000 + i, 26 + d]]).values[0]!, sensor })),
    }));
    const applied = await state.applyReadings(devices, 2000);
    expect(applied).toEqual(names.map(() => names.map(() => 'WARNING')));
    for (const [d, device] of names.entries()) {
      const s = await storedState(redis, keys.deviceState('e1', device));
      expect(Object.keys(s.points)).toEqual(names);
      for (const n of names) expect(s.points[n]).toMatchObject({ value: String(26 + d), status: 'WARNING' });
    }
    expect(await redis.zcard(keys.envEvents('e1'))).toBe(names.length * names.length);
  });

  it("applies the other devices when one device's data fails its step", async () => {
    const { redis, keys, state } = setup();
    const one = (device: string, v: number) => ({ ...reading([[1000, v]], 3000), device });
    // A value of a data point the device's rules do not name: no step can apply it.
    const broken = one('broken', 26);
    broken.values = [{ ...broken.values[0]!, sensor: 'Unknown' }];
    const applied = await state.applyReadings([one('a', 26), broken, one('b', 31)], 5000);
    expect(applied[0]).toEqual(['WARNING']);
    expect(applied[2]).toEqual(['CRITICAL']);
    expect(refusal(applied[1])).toBe('TypeError');
    expect(await redis.exists(keys.deviceState('e1', 'broken'))).toBe(0);
    expect(await redis.zscore(keys.availabilityDeadlines(), 'e1\nbroken')).toBeNull();
    expect((await storedState(redis, keys.deviceState('e1', 'b'))).points.Temperature?.value).toBe('31');
    expect(await redis.zcard(keys.envEvents('e1'))).toBe(2);
    expect(await redis.xlen(keys.eventOutbox())).toBe(2);
  });

  it('applies a device with thousands of data points in one step, events and all', async () => {
    const { redis, keys, state } = setup();
    const one = (device: string, v: number) => ({ ...reading([[1000, v]], 3000), device });
    // More fields than a script's unpack takes in one command: the writes are cut into several.
    const meta = reading([]).sensors.get('Temperature')!;
    const huge: DeviceReadings = {
      ...one('huge', 26),
      sensors: new Map(Array.from({ length: 3000 }, (_, i) => [`P${i}`, meta])),
      values: Array.from({ length: 3000 }, (_, i) => ({ ...one('huge', 26).values[0]!, sensor: `P${i}` })),
    };
    const applied = await state.applyReadings([one('first', 26), huge, one('last', 31)], 5000);
    expect(applied[1]).toEqual(Array.from({ length: 3000 }, () => 'WARNING'));
    expect(applied[0]).toEqual(['WARNING']);
    expect(applied[2]).toEqual(['CRITICAL']);
    const stored = await storedState(redis, keys.deviceState('e1', 'huge'));
    expect(Object.keys(stored.points)).toHaveLength(3000);
    expect(stored.points.P2999).toMatchObject({ value: '26', status: 'WARNING' });
    // The device's event set keeps the newest `eventsCap` (1000); every event is in the outbox.
    expect(await redis.zcard(keys.deviceEvents('e1', 'huge'))).toBe(1000);
    expect(await redis.xlen(keys.eventOutbox())).toBe(3002);
  });

  it('rejects when Redis cannot be reached, rather than reporting a device as refused', async () => {
    const config = testConfig({ redisUrl: 'redis://127.0.0.1:1' });
    const redis = connectRedis(config.redisUrl, 'command');
    onTestFinished(() => closeRedis(redis));
    const state = createStateStore({ redis, keys: createKeys(config.keyPrefix), eventsCap: 1000 });
    await expect(state.applyReadings([reading([[1000, 20]])], 2000)).rejects.toThrow();
  });
});
