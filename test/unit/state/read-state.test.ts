import { describe, expect, it } from 'vitest';
import { encodePoint } from '../../../src/state/point-record.ts';
import { dataPointState, planStateRead, stateFromQueued } from '../../../src/state/read-state.ts';

const NOW = 1_800_000_000_000;
const packed = (status: string) =>
  encodePoint({
    updatedMs: NOW - 1000,
    offsetNs: 0,
    rule: 0,
    rulesId: 'r',
    status,
    lastSuccessMs: null,
    statusSinceMs: NOW - 1000,
    hour: null,
    receivedMs: null,
    held: [],
    shownValue: '',
  });

describe('device state read', () => {
  it('decodes data points named like Object.prototype members, and knows none it was not given', () => {
    const plan = planStateRead(['__proto__', 'constructor', 'toString']);
    // HGETALL of the suppressions as ioredis gives it: `__proto__` an own property.
    const suppressed = JSON.parse('{"__proto__":"0","valueOf":"0"}') as Record<string, string>;
    const replies: unknown[] = [
      [Buffer.from('30'), packed('WARNING'), Buffer.from('10'), packed('SUCCESS'), null, null],
      suppressed,
    ];
    const state = stateFromQueued(plan, () => replies.shift());
    expect(dataPointState(state, '__proto__', NOW)).toMatchObject({
      value: 30,
      status: 'WARNING',
      suppressed: true,
    });
    expect(dataPointState(state, 'constructor', NOW)).toMatchObject({ value: 10, suppressed: false });
    for (const name of ['toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__']) {
      expect(dataPointState(state, name, NOW)).toEqual({
        value: null,
        status: 'SUCCESS',
        updatedMs: null,
        lastSuccessMs: null,
        statusSinceMs: null,
        suppressed: name === 'valueOf',
      });
    }
  });
});
