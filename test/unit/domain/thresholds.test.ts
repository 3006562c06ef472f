import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isAppError } from '../../../src/errors/app-error.ts';
import {
  evaluateStatus,
  parseThresholdSet,
  possibleOutcomes,
  thresholdFingerprint,
} from '../../../src/domain/thresholds.ts';
import { ruleDescription } from '../../../src/domain/rule-text.ts';
import type { DataType, ThresholdRule, ThresholdSet } from '../../../src/domain/types.ts';

/** The §4 example: WARNING above 25, CRITICAL above 30, WARNING below 15. */
const comfort: ThresholdSet = {
  rules: [
    { status: 'WARNING', above: 25 },
    { status: 'CRITICAL', above: 30, description: 'Overheating' },
    { status: 'WARNING', below: 15 },
  ],
  hysteresis: 0,
};

function invalidMessage(input: { rules: unknown; hysteresis?: unknown }, dataType: DataType): string {
  try {
    parseThresholdSet(input, dataType);
  } catch (err) {
    if (isAppError(err) && err.code === 'INVALID_INPUT') return err.message;
    throw err;
  }
  throw new Error('expected INVALID_INPUT');
}

describe('parseThresholdSet', () => {
  it('accepts the definition example and defaults hysteresis to 0', () => {
    expect(parseThresholdSet({ rules: comfort.rules }, 'temperature')).toEqual(comfort);
  });

  it('keeps hysteresis and descriptions', () => {
    const set = parseThresholdSet(
      { rules: [{ status: 'ERROR', below: 3000, description: ' Battery low ' }], hysteresis: 50 },
      'millivolts',
    );
    expect(set).toEqual({
      rules: [{ status: 'ERROR', below: 3000, description: 'Battery low' }],
      hysteresis: 50,
    });
  });

  it.each([
    ['boolean', 'on', true],
    ['boolean', 0, false],
    ['integer', '3', 3],
    ['occupancy', true, 1],
    ['string', 'open', 'open'],
    ['string', 7, '7'],
  ] as const)('stores an equals rule for %s %j converted to %j', (dataType, equals, expected) => {
    expect(parseThresholdSet({ rules: [{ status: 'INFO', equals }] }, dataType).rules[0]).toEqual({
      status: 'INFO',
      equals: expected,
    });
  });

  it.each([
    [{ rules: 'above 25' }, 'temperature', /rules: must be a list/],
    [{ rules: [42] }, 'temperature', /rules\[0\]: must be an object/],
    [
      { rules: [{ status: 'WARNING' }] },
      'temperature',
      /rules\[0\]: needs exactly one of above, below or equals \(found none\)/,
    ],
    [{ rules: [{ status: 'WARNING', above: 1, below: 0 }] }, 'number', /found above and below/],
    [
      { rules: [comfort.rules[0], { status: 'SEVERE', above: 3 }] },
      'temperature',
      /rules\[1\]\.status: must be one of INFO, WARNING, ERROR, CRITICAL, got "SEVERE"/,
    ],
    [{ rules: [{ status: 'SUCCESS', above: 3 }] }, 'temperature', /rules\[0\]\.status/],
    [{ rules: [{ above: 3 }] }, 'temperature', /rules\[0\]\.status: .*got nothing/],
    [
      { rules: [{ status: 'ERROR', above: '25' }] },
      'temperature',
      /rules\[0\]\.above: must be a number, got "25"/,
    ],
    [
      { rules: [{ status: 'ERROR', below: Number.NaN }] },
      'temperature',
      /rules\[0\]\.below: must be a number/,
    ],
    [
      { rules: [{ status: 'ERROR', above: 1 }] },
      'string',
      /rules\[0\]\.above: above needs a numeric data type/,
    ],
    [{ rules: [{ status: 'ERROR', below: 1 }] }, 'boolean', /numeric data type/],
    [{ rules: [{ status: 'ERROR', above: 1 }] }, 'gps', /numeric data type/],
    [
      { rules: [{ status: 'ERROR', equals: 'open' }] },
      'integer',
      /rules\[0\]\.equals: does not fit data type integer: expected an integer, got "open"/,
    ],
    [{ rules: [{ status: 'ERROR', equals: 'maybe' }] }, 'boolean', /equals: does not fit data type boolean/],
    [{ rules: [{ status: 'ERROR', equals: 140 }] }, 'humidity', /between 0 and 100/],
    [{ rules: [{ status: 'ERROR', equals: '1,2' }] }, 'gps', /gps data points have no equals rules/],
    [{ rules: [{ status: 'ERROR', abvoe: 3 }] }, 'number', /rules\[0\]: unknown field "abvoe"/],
    [
      { rules: [{ status: 'ERROR', above: 3, description: '' }] },
      'number',
      /rules\[0\]\.description: must be text/,
    ],
    [{ rules: [], hysteresis: -1 }, 'number', /hysteresis: must be a number ≥ 0/],
    [{ rules: [], hysteresis: '1' }, 'number', /hysteresis: must be a number ≥ 0/],
  ] as [{ rules: unknown; hysteresis?: unknown }, DataType, RegExp][])(
    'refuses %j for %s as INVALID_INPUT naming the rule',
    (input, dataType, message) => {
      expect(invalidMessage(input, dataType)).toMatch(message);
    },
  );
});

describe('evaluateStatus', () => {
  it.each([
    [20, 'SUCCESS', -1],
    [25, 'SUCCESS', -1],
    [25.1, 'WARNING', 0],
    [30, 'WARNING', 0],
    [30.1, 'CRITICAL', 1],
    [15, 'SUCCESS', -1],
    [14.9, 'WARNING', 2],
  ] as const)('gives %d the status %s (rule %d) without hysteresis', (value, status, ruleIndex) => {
    expect(evaluateStatus(value, comfort, -1)).toEqual({ status, ruleIndex });
  });

  it('lets the most severe matching rule win whatever the list order', () => {
    const set: ThresholdSet = {
      rules: [
        { status: 'INFO', above: 0 },
        { status: 'CRITICAL', above: 20 },
        { status: 'ERROR', above: 10 },
        { status: 'WARNING', above: 5 },
      ],
      hysteresis: 0,
    };
    expect(evaluateStatus(3, set, -1)).toEqual({ status: 'INFO', ruleIndex: 0 });
    expect(evaluateStatus(7, set, -1)).toEqual({ status: 'WARNING', ruleIndex: 3 });
    expect(evaluateStatus(15, set, -1)).toEqual({ status: 'ERROR', ruleIndex: 2 });
    expect(evaluateStatus(25, set, -1)).toEqual({ status: 'CRITICAL', ruleIndex: 1 });
  });

  it('breaks ties between equally severe rules by list order', () => {
    const set: ThresholdSet = {
      rules: [
        { status: 'WARNING', above: 10, description: 'first' },
        { status: 'WARNING', above: 5, description: 'second' },
      ],
      hysteresis: 0,
    };
    expect(evaluateStatus(12, set, -1)).toEqual({ status: 'WARNING', ruleIndex: 0 });
    expect(evaluateStatus(7, set, -1)).toEqual({ status: 'WARNING', ruleIndex: 1 });
  });

  it('matches equals rules on strings exactly', () => {
    const set = parseThresholdSet(
      {
        rules: [
          { status: 'WARNING', equals: 'open' },
          { status: 'CRITICAL', equals: 'forced' },
        ],
      },
      'string',
    );
    expect(evaluateStatus('open', set, -1)).toEqual({ status: 'WARNING', ruleIndex: 0 });
    expect(evaluateStatus('forced', set, -1)).toEqual({ status: 'CRITICAL', ruleIndex: 1 });
    expect(evaluateStatus('Open', set, -1)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
    expect(evaluateStatus('open ', set, -1)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('matches equals rules on booleans and numbers after conversion', () => {
    const door = parseThresholdSet({ rules: [{ status: 'ERROR', equals: 'on' }] }, 'boolean');
    expect(evaluateStatus(true, door, -1).status).toBe('ERROR');
    expect(evaluateStatus(false, door, -1).status).toBe('SUCCESS');
    // A hand-made override that was not converted still compares by value.
    const handMade: ThresholdSet = { rules: [{ status: 'INFO', equals: '2' }], hysteresis: 0 };
    expect(evaluateStatus(2, handMade, -1).status).toBe('INFO');
    expect(evaluateStatus(2.5, handMade, -1).status).toBe('SUCCESS');
    const flag: ThresholdSet = { rules: [{ status: 'INFO', equals: 'true' }], hysteresis: 0 };
    expect(evaluateStatus(true, flag, -1).status).toBe('INFO');
  });

  it('ignores above and below rules for values that are not numbers', () => {
    expect(evaluateStatus('31', comfort, -1).status).toBe('SUCCESS');
    expect(evaluateStatus({ lat: 40, lon: 4 }, comfort, -1).status).toBe('SUCCESS');
  });

  it('holds a status entered through above until the value is at or below the limit minus hysteresis', () => {
    const set = { ...comfort, hysteresis: 0.5 };
    expect(evaluateStatus(24.8, set, 0)).toEqual({ status: 'WARNING', ruleIndex: 0 });
    expect(evaluateStatus(24.51, set, 0)).toEqual({ status: 'WARNING', ruleIndex: 0 });
    expect(evaluateStatus(24.5, set, 0)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
    // Entering still needs the limit itself to be crossed.
    expect(evaluateStatus(24.8, set, -1)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('holds a status entered through below until the value is at or above the limit plus hysteresis', () => {
    const set = { ...comfort, hysteresis: 0.5 };
    expect(evaluateStatus(15.2, set, 2)).toEqual({ status: 'WARNING', ruleIndex: 2 });
    expect(evaluateStatus(15.5, set, 2)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('steps down from a held CRITICAL to the WARNING that still matches on its own', () => {
    const set = { ...comfort, hysteresis: 0.5 };
    expect(evaluateStatus(29.8, set, 1)).toEqual({ status: 'CRITICAL', ruleIndex: 1 });
    expect(evaluateStatus(29.4, set, 1)).toEqual({ status: 'WARNING', ruleIndex: 0 });
  });

  it('ignores a previous rule index outside the rule list (rules were replaced)', () => {
    const set = { ...comfort, hysteresis: 0.5 };
    expect(evaluateStatus(24.8, set, 7)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('gives equals rules no hysteresis', () => {
    const set: ThresholdSet = { rules: [{ status: 'WARNING', equals: 3 }], hysteresis: 1 };
    expect(evaluateStatus(3.5, set, 0)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('keeps a noisy series around the limit from flapping', () => {
    const series = [24.6, 25.2, 24.9, 25.1, 24.7, 25.3, 24.8, 24.6, 25.05, 24.4, 24.9, 25.0];
    const transitions = (hysteresis: number) => {
      const set = { ...comfort, hysteresis };
      let previous = -1;
      let changes = 0;
      for (const value of series) {
        const next = evaluateStatus(value, set, previous);
        if (next.ruleIndex !== previous) changes += 1;
        previous = next.ruleIndex;
      }
      return changes;
    };
    expect(transitions(0)).toBe(8);
    // Enters at 25.2, stays through the noise, leaves once at 24.4.
    expect(transitions(0.5)).toBe(2);
  });

  it('evaluates a device override as a whole replacement of the rules and hysteresis', () => {
    const override = parseThresholdSet(
      { rules: [{ status: 'ERROR', above: 28, description: 'Server room too warm' }], hysteresis: 1 },
      'temperature',
    );
    expect(evaluateStatus(14, override, -1)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
    expect(evaluateStatus(26, override, -1)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
    expect(evaluateStatus(28.5, override, -1)).toEqual({ status: 'ERROR', ruleIndex: 0 });
    expect(evaluateStatus(27.2, override, 0)).toEqual({ status: 'ERROR', ruleIndex: 0 });
    expect(evaluateStatus(27, override, 0)).toEqual({ status: 'SUCCESS', ruleIndex: -1 });
  });

  it('gives SUCCESS for an empty rule list', () => {
    expect(evaluateStatus(1000, { rules: [], hysteresis: 2 }, -1)).toEqual({
      status: 'SUCCESS',
      ruleIndex: -1,
    });
  });
});

describe('possibleOutcomes', () => {
  it('lists the outcome for a previous SUCCESS first, then one per previous rule', () => {
    const set = { ...comfort, hysteresis: 0.5 };
    expect(possibleOutcomes(24.8, set)).toEqual([
      { status: 'SUCCESS', ruleIndex: -1 },
      { status: 'WARNING', ruleIndex: 0 },
      { status: 'SUCCESS', ruleIndex: -1 },
      { status: 'SUCCESS', ruleIndex: -1 },
    ]);
  });

  it('agrees with evaluateStatus for every previous rule', () => {
    const set: ThresholdSet = {
      rules: [
        { status: 'WARNING', above: 25 },
        { status: 'CRITICAL', above: 30 },
        { status: 'INFO', equals: 20 },
        { status: 'ERROR', below: 0 },
      ],
      hysteresis: 1.5,
    };
    fc.assert(
      fc.property(fc.double({ min: -10, max: 40, noNaN: true }), (value) => {
        const outcomes = possibleOutcomes(value, set);
        expect(outcomes).toHaveLength(set.rules.length + 1);
        outcomes.forEach((outcome, position) => {
          expect(outcome).toEqual(evaluateStatus(value, set, position - 1));
        });
      }),
    );
  });
});

describe('ruleDescription', () => {
  it.each([
    [{ status: 'WARNING', above: 25 }, 'temperature', 'en', 'Above 25 °C'],
    [{ status: 'WARNING', below: 15 }, 'temperature', 'en', 'Below 15 °C'],
    [{ status: 'WARNING', above: 25.5 }, 'temperature', 'nl', 'Above 25,5 °C'],
    [{ status: 'ERROR', below: 3000 }, 'millivolts', 'en', 'Below 3000 mV'],
    [{ status: 'ERROR', above: 1200 }, 'co2', 'nl', 'Above 1200 ppm'],
    [{ status: 'INFO', equals: 'open' }, 'string', 'en', 'Equals open'],
    [{ status: 'INFO', equals: true }, 'boolean', 'nl', 'Equals true'],
    [{ status: 'INFO', equals: 0 }, 'occupancy', 'en', 'Equals 0'],
    [{ status: 'CRITICAL', above: 30, description: 'Overheating' }, 'temperature', 'en', 'Overheating'],
  ] as [ThresholdRule, DataType, 'en' | 'nl', string][])(
    'describes %j on %s in %s as %j',
    (rule, dataType, locale, text) => {
      expect(ruleDescription(rule, dataType, locale)).toBe(text);
    },
  );
});

describe('thresholdFingerprint', () => {
  it('is 12 hex characters and stable', () => {
    const fingerprint = thresholdFingerprint(comfort);
    expect(fingerprint).toMatch(/^[0-9a-f]{12}$/);
    expect(thresholdFingerprint(structuredClone(comfort))).toBe(fingerprint);
  });

  it('ignores the order of keys inside a rule', () => {
    const reordered: ThresholdSet = {
      hysteresis: 0,
      rules: comfort.rules.map((r) => Object.fromEntries(Object.entries(r).reverse()) as ThresholdRule),
    };
    expect(thresholdFingerprint(reordered)).toBe(thresholdFingerprint(comfort));
  });

  it.each([
    ['hysteresis', { ...comfort, hysteresis: 0.5 }],
    ['a limit', { ...comfort, rules: [{ status: 'WARNING', above: 26 }, ...comfort.rules.slice(1)] }],
    ['a status', { ...comfort, rules: [{ status: 'ERROR', above: 25 }, ...comfort.rules.slice(1)] }],
    ['the order', { ...comfort, rules: [...comfort.rules].reverse() }],
    [
      'above into below',
      { ...comfort, rules: [{ status: 'WARNING', below: 25 }, ...comfort.rules.slice(1)] },
    ],
    [
      'a description',
      {
        ...comfort,
        rules: [{ status: 'WARNING', above: 25, description: 'Warm' }, ...comfort.rules.slice(1)],
      },
    ],
  ] as [string, ThresholdSet][])('changes when %s changes', (_what, changed) => {
    expect(thresholdFingerprint(changed)).not.toBe(thresholdFingerprint(comfort));
  });
});
