import { describe, expect, it } from 'vitest';
import {
  escapeMeasurement,
  escapeTag,
  formatLine,
  quoteFieldString,
  timestampNs,
} from '../../../src/history/line-protocol.ts';
import { contactLine, eventLine, valueLine, type ValuePoint } from '../../../src/history/history-writer.ts';
import { STATUSES, type EventRecord } from '../../../src/domain/types.ts';

describe('escapeTag', () => {
  it.each([
    ['plain', 'plain'],
    ['with space', 'with\\ space'],
    ['a,b=c', 'a\\,b\\=c'],
    ['quote"kept', 'quote"kept'],
    ['back\\slash', 'back\\slash'],
    ['ends\\', 'ends/'],
    ['a\\,b', 'a/\\,b'],
    ['line\nbreak', 'line\\ break'],
    ['Zürich 🌡', 'Zürich\\ 🌡'],
  ])('escapes %j as %j', (input, expected) => {
    expect(escapeTag(input)).toBe(expected);
  });
});

describe('field strings and measurements', () => {
  it('quotes strings escaping backslashes and quotes and keeps newlines', () => {
    expect(quoteFieldString('a"b\\c\nd')).toBe('"a\\"b\\\\c\nd"');
  });
  it('escapes commas and spaces in measurement names', () => {
    expect(escapeMeasurement('a b,c')).toBe('a\\ b\\,c');
  });
});

describe('timestampNs', () => {
  it('adds the sub-millisecond offset exactly beyond 2^53', () => {
    expect(timestampNs(1_763_790_000_123, 999_999)).toBe('1763790000123999999');
    expect(timestampNs(1_763_790_000_123, 7)).toBe('1763790000123000007');
  });
  it('clamps offsets into 0..999999', () => {
    expect(timestampNs(1000, -5)).toBe('1000000000');
    expect(timestampNs(1000, 5_000_000)).toBe('1000999999');
  });
});

describe('formatLine', () => {
  it('sorts tags, leaves out empty tags and undefined or non-finite fields', () => {
    expect(
      formatLine('m', { b: '2', a: '1', c: '' }, { x: 1.5, y: undefined, z: NaN, n: { int: 3 } }, '5'),
    ).toBe('m,a=1,b=2 x=1.5,n=3i 5');
  });
  it('gives no line without fields', () => {
    expect(formatLine('m', { a: '1' }, { x: undefined }, '5')).toBeUndefined();
  });
});

const point = (over: Partial<ValuePoint>): ValuePoint => ({
  env: 'demo',
  device: 'dev 1',
  sensor: 'Temperature',
  sensorType: 'tempC',
  dataType: 'temperature',
  timeMs: 1_763_790_000_000,
  offsetNs: 42,
  value: 21.5,
  status: 'WARNING',
  ...over,
});

describe('value, contact and event lines', () => {
  it('writes numbers as float value with the status as severity', () => {
    expect(valueLine(point({}))).toBe(
      'readings,device=dev\\ 1,env=demo,sensor=Temperature,sensorType=tempC value=21.5,severity=2i 1763790000000000042',
    );
  });
  it('writes booleans as 0/1, strings as text and GPS as lat/lon', () => {
    expect(valueLine(point({ dataType: 'boolean', value: true }))).toContain(' value=1,severity=');
    expect(valueLine(point({ dataType: 'boolean', value: false }))).toContain(' value=0,severity=');
    expect(valueLine(point({ dataType: 'string', value: 'hi "x"' }))).toContain(
      ' text="hi \\"x\\"",severity=',
    );
    expect(valueLine(point({ dataType: 'gps', value: { lat: 52.37, lon: 4.89 } }))).toContain(
      ' lat=52.37,lon=4.89,severity=',
    );
  });
  it('builds exactly the line formatLine builds, for every kind of value and awkward names', () => {
    const reference = (p: ValuePoint) => {
      const v = p.value;
      const fields =
        typeof v === 'number'
          ? { value: v }
          : typeof v === 'boolean'
            ? { value: v ? 1 : 0 }
            : typeof v === 'string'
              ? { text: v }
              : { lat: v.lat, lon: v.lon };
      return formatLine(
        'readings',
        { env: p.env, device: p.device, sensor: p.sensor, sensorType: p.sensorType },
        { ...fields, severity: { int: STATUSES.indexOf(p.status) } },
        timestampNs(p.timeMs, p.offsetNs),
      );
    };
    const cases: Partial<ValuePoint>[] = [
      {},
      { device: 'a,b=c d\\', env: 'e\nv', sensor: 'x=y', sensorType: 'number' },
      { value: Number.NaN },
      { value: -0.000001 },
      { value: 1e21 },
      { dataType: 'boolean', value: false },
      { dataType: 'string', value: 'multi\nline "quoted" \\ back' },
      { dataType: 'gps', value: { lat: Number.POSITIVE_INFINITY, lon: 4.89 } },
      { timeMs: 5, offsetNs: 999_999 },
      { status: 'CRITICAL' },
    ];
    for (const c of cases) expect(valueLine(point(c))).toBe(reference(point(c)));
  });
  it('writes a contact per payload', () => {
    expect(contactLine({ env: 'demo', device: 'd', timeMs: 1000, offsetNs: 1 })).toBe(
      'contacts,device=d,env=demo seen=1 1000000001',
    );
  });
  it('gives an event the same timestamp every time and different events different offsets', () => {
    const e: EventRecord = {
      id: 'ev-1',
      env: 'demo',
      deviceName: 'd',
      displayName: 'D',
      sensorName: 'Temperature',
      sensorType: 'tempC',
      sensorValue: 31,
      eventStatus: 'CRITICAL',
      eventCategory: 'Sensors',
      eventMessage: 'Temperature - Overheating - CRITICAL - 31.0 °C',
      receivedMs: 1_763_790_000_000,
    };
    const line = eventLine(e);
    expect(line).toBe(eventLine({ ...e }));
    expect(line).toMatch(/^events,category=Sensors,device=d,env=demo,status=CRITICAL id="ev-1",/);
    expect(line?.split(' ').at(-1)).not.toBe(
      eventLine({ ...e, id: 'ev-2' })
        ?.split(' ')
        .at(-1),
    );
  });
});
