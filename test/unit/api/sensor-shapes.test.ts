import { describe, expect, it } from 'vitest';
import { csvCell } from '../../../src/api/export-route.ts';
import { deviceShape, listedSensor, sensorDetails, sensorUtc } from '../../../src/api/sensor-shapes.ts';
import type { DataPointSpec } from '../../../src/domain/types.ts';
import { emptyState } from '../../../src/state/read-state.ts';

const temperature: DataPointSpec = {
  name: 'Temperature',
  displayName: 'Temperature',
  dataType: 'temperature',
  hysteresis: 0,
  thresholds: [],
};
const t0 = Date.UTC(2026, 10, 22, 5, 0, 0, 123);
const state = {
  values: new Map([['Temperature', '19.25']]),
  points: new Map([
    [
      'Temperature',
      {
        updatedMs: t0,
        offsetNs: 0,
        rule: 0,
        rulesId: 'r',
        status: 'WARNING',
        lastSuccessMs: t0 - 60_000,
        statusSinceMs: t0,
        hour: null,
        receivedMs: null,
        held: [],
        shownValue: '',
      },
    ],
  ]),
  suppressed: new Map<string, number>(),
  historyVersion: 0,
};

describe('data point shapes', () => {
  it('gives sensors/list its own three timestamp names', () => {
    expect(listedSensor(temperature, { state, locale: 'en', nowMs: t0 })).toEqual({
      sensorName: 'Temperature',
      displayName: 'Temperature',
      sensorType: 'tempC',
      currentValue: '19.3 °C',
      rawValue: 19.25,
      suppressed: false,
      currentStatus: 'WARNING',
      units: ' °C',
      lastSuccessAt: '2026-11-22T04:59:00.123Z',
      currentSuccessAt: '2026-11-22T05:00:00.123Z',
      updatedAt: '2026-11-22T05:00:00.123Z',
    });
  });

  it('gives batch and details the UTC names, details with last24Hours', () => {
    const utc = sensorUtc(temperature, { state, locale: 'nl', nowMs: t0 });
    expect(Object.keys(utc)).toContain('timeSinceLastSuccessUTC');
    expect(utc.currentValue).toBe('19,3 °C');
    const details = sensorDetails(temperature, { state, locale: 'en', nowMs: t0 }, []);
    expect(details.last24Hours).toEqual([]);
    expect(details.updatedUTC).toBe('2026-11-22T05:00:00.123Z');
  });

  it('lists a data point without a value with nulls and SUCCESS', () => {
    const empty = listedSensor(temperature, {
      state: emptyState(),
      locale: 'en',
      nowMs: t0,
    });
    expect(empty).toMatchObject({
      currentValue: null,
      rawValue: null,
      currentStatus: 'SUCCESS',
      lastSuccessAt: null,
      currentSuccessAt: null,
      updatedAt: null,
      suppressed: false,
    });
  });

  it.each([
    [0, true],
    [t0 + 1, true],
    [t0 - 1, false],
  ])('treats suppression until %d as suppressed=%s at now', (until, expected) => {
    const s = { ...emptyState(), suppressed: new Map([['Temperature', until]]) };
    expect(sensorUtc(temperature, { state: s, locale: 'en', nowMs: t0 }).suppressed).toBe(expected);
  });

  it('gives a device that never posted a null lastContactUTC', () => {
    const d = {
      env: 'e',
      deviceName: 'd',
      displayName: 'D',
      definitionName: 'Def',
      definitionIsPublic: false,
      labels: {},
      revision: 1,
      createdUTC: '',
    };
    expect(deviceShape(d, null).lastContactUTC).toBeNull();
    expect(deviceShape(d, t0).lastContactUTC).toBe('2026-11-22T05:00:00.123Z');
  });
});

describe('CSV cells', () => {
  it.each([
    [19.2, '19.2'],
    [true, 'true'],
    ['plain', 'plain'],
    ['a,"b"', '"a,""b"""'],
    [{ lat: 52.37, lon: 4.89 }, '"52.37,4.89"'],
  ])('writes %j as %s', (value, expected) => {
    expect(csvCell(value)).toBe(expected);
  });
});
