import { describe, expect, it } from 'vitest';
import { createKeys } from '../../../src/keys.ts';
import { createLateWrites, type WrittenDevice } from '../../../src/worker/late-writes.ts';

const H = 3_600_000;
const NOW = Date.UTC(2026, 10, 20, 10, 30);
const HOUR = Date.UTC(2026, 10, 20, 10);
const keys = createKeys('v');
const lateWrites = createLateWrites({ keys, resampleEveryMs: H });

/** A device with one value per [sensor, time, number]; sorted by time as the worker has them. */
const device = (name: string, ...values: [string, number, number | null][]): WrittenDevice => ({
  env: 'acme',
  device: name,
  values: values
    .map(([sensor, timeMs, number]) => ({
      sensor,
      timeMs,
      number,
      offsetNs: 0,
      valueJson: '',
      currentValue: '',
      outcomes: [],
      receivedMs: 0,
    }))
    .sort((a, b) => a.timeMs - b.timeMs),
});

describe('late writes', () => {
  it('add nothing for a step whose values are of the current hour', () => {
    const commands = lateWrites([device('d1', ['T', NOW - 1000, 20], ['H', NOW, 40])], NOW);
    expect(commands(NOW + 500)).toEqual([]);
  });

  it('bump the history version of a device with a value in a closed hour, once', () => {
    const commands = lateWrites(
      [
        device('d1', ['T', HOUR - 1000, 20], ['T', HOUR - 500, 21], ['T', NOW, 22]),
        device('d2', ['T', NOW, 1]),
      ],
      NOW,
    );
    expect(commands(NOW + 500)).toEqual([['HINCRBY', keys.deviceState('acme', 'd1'), '@hv', 1]]);
  });

  it('take a value as late when its hour closed while it was written, or within the clock skew', () => {
    const commands = lateWrites([device('d1', ['T', HOUR + H - 10_000, 20])], HOUR + H - 9000);
    expect(commands(HOUR + H - 6000)).toEqual([]);
    expect(commands(HOUR + H - 4000)).toHaveLength(1);
    expect(commands(HOUR + H + 100)).toHaveLength(1);
  });

  it('mark each data point and hour older than the rollup window once, numeric values only', () => {
    const commands = lateWrites(
      [
        device(
          'd1',
          ['T', HOUR - 5 * H + 10, 20],
          ['T', HOUR - 5 * H + 20, 21],
          ['H', HOUR - 5 * H + 20, 40],
          ['Label', HOUR - 5 * H + 30, null],
          ['T', HOUR - 2 * H + 1, 22],
          ['T', HOUR - H + 1, 23],
        ),
      ],
      NOW,
    )(NOW + 500);
    expect(commands).toHaveLength(2);
    const [name, key, ...rest] = commands[1]!;
    expect([name, key]).toEqual(['HSET', keys.lateHours()]);
    const fields = rest.filter((_, i) => i % 2 === 0);
    // 09:00 is still in the window of the 11:00 run; 08:00 and 05:00 are not.
    expect(fields.sort()).toEqual(
      [`T\n${HOUR - 5 * H}`, `H\n${HOUR - 5 * H}`, `T\n${HOUR - 2 * H}`].map((f) => `acme\nd1\n${f}`).sort(),
    );
    const tokens = new Set(rest.filter((_, i) => i % 2 === 1));
    expect(tokens.size).toBe(1);
  });
});
