import { describe, expect, it } from 'vitest';
import { runDefinitionTest } from '../../../src/cli/definition-test.ts';
import type { DataPointSpec, DefinitionSpec } from '../../../src/domain/types.ts';
import { createLogger } from '../../../src/log/logger.ts';

const PARSER = 'function parsePayload(s) { return JSON.parse(s); }';
const point = (name: string, dataType: string, above?: number): DataPointSpec =>
  ({
    name,
    displayName: name,
    dataType,
    hysteresis: 0,
    thresholds: above === undefined ? [] : [{ status: 'WARNING', above }],
  }) as DataPointSpec;

function test(dataPoints: DataPointSpec[], payload: string) {
  const spec: DefinitionSpec = { name: 'Tested', manufacturer: 'Acme', version: '1', dataPoints };
  return runDefinitionTest({
    spec,
    parserSource: PARSER,
    parserFilename: 'parser.js',
    payload,
    locale: 'en',
    timeoutMs: 1000,
    memoryLimitMb: 32,
    log: createLogger('silent'),
  });
}

describe('vigil definition test', () => {
  it('shows what the worker stores for data points named like Object.prototype members', () => {
    const report = test(
      [
        point('constructor', 'temperature', 25),
        point('__proto__', 'number', 25),
        point('toString', 'string'),
      ],
      '{"constructor": 26.04, "__proto__": "12", "toString": "a\\ud800", "valueOf": 1}',
    );
    expect(report).toMatchObject({
      ok: true,
      dataPoints: [
        {
          sensorName: 'constructor',
          rawValue: 26.04,
          currentValue: '26.0 °C',
          currentStatus: 'WARNING',
          reason: 'Above 25 °C',
        },
        { sensorName: '__proto__', parsed: '12', rawValue: 12, currentValue: '12', currentStatus: 'SUCCESS' },
        { sensorName: 'toString', rawValue: 'a\ufffd', currentStatus: 'SUCCESS' },
      ],
      unknownKeys: ['valueOf'],
    });
  });

  it('shows a conversion the worker would fail, as the worker fails it', () => {
    // A definition of a later version: a data type this one does not know.
    const report = test([point('Temperature', 'temperature'), point('Mood', 'mood')], '{"Mood": "happy"}');
    expect(report).toMatchObject({ ok: false, code: 'PROCESSING_FAILED' });
  });
});
