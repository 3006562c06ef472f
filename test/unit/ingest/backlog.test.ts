import { describe, expect, it } from 'vitest';
import { refusedEnvironments } from '../../../src/ingest/backlog.ts';

const limits = { highWater: 100, envHighWater: 60 };
const refused = (payloads: number, counts: Record<string, number>, l = limits) => {
  const r = refusedEnvironments(payloads, new Map(Object.entries(counts)), l);
  return { everyone: r.everyone, envs: [...r.envs].sort() };
};

describe('refusedEnvironments', () => {
  it.each([
    ['nobody below both marks', 50, { a: 40, b: 10 }, limits, []],
    ['an environment above its own cap, the backlog below the mark', 70, { a: 65, b: 5 }, limits, ['a']],
    [
      'the environment at or above its share of a full backlog',
      101,
      { a: 50, b: 1, c: 50 },
      limits,
      ['a', 'c'],
    ],
    ['the only environment of a full backlog', 101, { a: 101 }, { ...limits, envHighWater: 0 }, ['a']],
    ['nobody by its own cap when the cap is off', 90, { a: 90 }, { ...limits, envHighWater: 0 }, []],
  ])('refuses %s', (_what, payloads, counts, l, envs) => {
    expect(refused(payloads, counts, l)).toEqual({ everyone: false, envs });
  });

  it('refuses everyone when the backlog is over the mark and nothing is counted per environment', () => {
    expect(refused(150, {})).toEqual({ everyone: true, envs: [] });
  });

  it('always refuses someone when the counted backlog is over the mark', () => {
    for (let envs = 1; envs <= 20; envs++) {
      const counts = Object.fromEntries(
        Array.from({ length: envs }, (_, i) => [`e${i}`, 1 + ((i * 37) % 23)]),
      );
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      const highWater = total - 1;
      expect(refused(total, counts, { highWater, envHighWater: 0 }).envs.length).toBeGreaterThan(0);
    }
  });
});
