import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { routeFilter, routeInput, type RouteRecord } from '../../../src/alerting/route-spec.ts';
import type { EventRecord } from '../../../src/domain/types.ts';

const event = (fields: Partial<EventRecord>): EventRecord => ({
  id: 'e1',
  env: 'acme',
  deviceName: 'hall-1',
  displayName: 'Hall',
  sensorName: 'Temperature',
  sensorType: 'tempC',
  sensorValue: 26,
  eventStatus: 'WARNING',
  eventCategory: 'Sensors',
  eventMessage: 'm',
  receivedMs: 0,
  ...fields,
});

const route = (input: Record<string, unknown>): RouteRecord => ({
  ...routeInput.parse({ name: 'r', channels: ['c'], ...input }),
  id: 'r1',
  createdUTC: '',
});

describe('route filters', () => {
  it.each([
    [{}, {}, true],
    [{}, { eventStatus: 'SUCCESS' }, false],
    [{ includeSuccess: true }, { eventStatus: 'SUCCESS' }, true],
    [{ minStatus: 'WARNING', includeSuccess: true }, { eventStatus: 'SUCCESS' }, true],
    [{ minStatus: 'WARNING' }, { eventStatus: 'INFO' }, false],
    [{ minStatus: 'WARNING' }, { eventStatus: 'WARNING' }, true],
    [{ minStatus: 'WARNING' }, { eventStatus: 'CRITICAL' }, true],
    [{ minStatus: 'CRITICAL' }, { eventStatus: 'ERROR' }, false],
    [{ category: 'Availability' }, {}, false],
    [{ category: 'Availability' }, { eventCategory: 'Availability', eventStatus: 'ERROR' }, true],
    [{ device: 'hall-*' }, {}, true],
    [{ device: 'hall-?' }, { deviceName: 'hall-12' }, false],
    [{ device: 'hall.1' }, {}, false],
    [{ device: 'HALL-*' }, {}, false],
    [{ device: '*' }, { deviceName: 'any thing' }, true],
    [{ sensor: 'Humidity' }, {}, false],
    [{ sensor: 'Temperature' }, {}, true],
  ] as const)('route %j, event %j → %s', (filter, fields, expected) => {
    expect(routeFilter(route(filter))(event(fields as Partial<EventRecord>), {})).toBe(expected);
  });

  it.each([
    [{ site: 'amsterdam' }, { site: 'amsterdam' }, true],
    [{ site: 'amsterdam' }, { site: 'delft' }, false],
    [{ site: 'amsterdam' }, {}, false],
    [{ site: 'amsterdam' }, { site: 'amsterdam', customer: 'acme' }, true],
    [{ site: 'amsterdam', customer: 'acme' }, { site: 'amsterdam' }, false],
    [{ site: 'amsterdam', customer: 'acme' }, { customer: 'acme', site: 'amsterdam' }, true],
    [{ site: 'Amsterdam' }, { site: 'amsterdam' }, false],
    [{}, { site: 'delft' }, true],
  ] as const)('route labels %j, device labels %j → %s', (wanted, labels, expected) => {
    expect(routeFilter(route({ labels: wanted }))(event({}), labels)).toBe(expected);
  });

  it('finds only the device’s own labels, never what every object inherits', () => {
    const r = route({ labels: { constructor: 'x' } });
    expect(routeFilter(r)(event({}), {})).toBe(false);
    expect(routeFilter(r)(event({}), { constructor: 'x' })).toBe(true);
  });

  it('stores labels sorted by key, none as no filter, and refuses what a device could not carry', () => {
    expect(Object.keys(route({ labels: { site: 'a', customer: 'b' } }).labels ?? {})).toEqual([
      'customer',
      'site',
    ]);
    expect(route({ labels: {} })).not.toHaveProperty('labels');
    for (const labels of [{ '9site': 'a' }, { site: '' }, { site: 'a\nb' }, { site: 1 }])
      expect(routeInput.safeParse({ name: 'r', channels: ['c'], labels }).success).toBe(false);
  });

  it('stores reminders and quiet hours parsed, and refuses what cannot be', () => {
    expect(
      route({ remindEvery: '1h', quietHours: '22:00-07:00', timeZone: 'Europe/Amsterdam' }),
    ).toMatchObject({
      remindEveryMs: 3_600_000,
      quietHours: { from: '22:00', to: '07:00', timeZone: 'Europe/Amsterdam' },
    });
    expect(route({ quietHours: '22:00-07:00' }).quietHours?.timeZone).toBe('UTC');
    expect(routeInput.safeParse({ name: 'r', channels: ['c'], remindEvery: '10s' }).success).toBe(false);
    expect(routeInput.safeParse({ name: 'r', channels: [] }).success).toBe(false);
    expect(routeInput.safeParse({ name: 'r r', channels: ['c'] }).success).toBe(false);
    expect(route({ channels: ['a', 'b', 'a'] }).channels).toEqual(['a', 'b']);
  });
});

/** What a device glob means, said as simply as possible: `*` any characters, `?` one, the rest itself. */
function referenceMatch(glob: string, name: string): boolean {
  const memo = new Map<number, boolean>();
  const from = (g: number, n: number): boolean => {
    const key = g * (name.length + 1) + n;
    let result = memo.get(key);
    if (result !== undefined) return result;
    if (g === glob.length) result = n === name.length;
    else if (glob[g] === '*') result = from(g + 1, n) || (n < name.length && from(g, n + 1));
    else result = n < name.length && (glob[g] === '?' || glob[g] === name[n]) && from(g + 1, n + 1);
    memo.set(key, result);
    return result;
  };
  return from(0, 0);
}

describe('device globs', () => {
  const matches = (glob: string, deviceName: string) =>
    routeFilter(route({ device: glob }))(event({ deviceName }), {});

  it('match as the plain reference matcher does', () => {
    // Characters a regular expression would treat as syntax stand beside the wildcards.
    const globText = fc.string({ unit: fc.constantFrom('a', 'b', '*', '?', '.', '\\', '\n'), minLength: 1 });
    const nameText = fc.string({ unit: fc.constantFrom('a', 'b', '.', '\\', '\n'), maxLength: 24 });
    fc.assert(
      fc.property(globText, nameText, (glob, name) => matches(glob, name) === referenceMatch(glob, name)),
      { numRuns: 2000 },
    );
  });

  it('answers a glob of many stars on a 10,000-character name', () => {
    const glob = `${'*a'.repeat(12)}*b`;
    expect(matches(glob, 'a'.repeat(10_000))).toBe(false);
    expect(matches(glob, `${'a'.repeat(9_999)}b`)).toBe(true);
    expect(matches(glob, `b${'a'.repeat(9_999)}`)).toBe(false);
  });
});
