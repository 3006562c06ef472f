import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDefinitionYaml } from '../../../src/domain/definition-spec.ts';
import { tryDefinition, type DefinitionTrialInput } from '../../../src/worker/definition-trial.ts';
import { ttsUplink } from '../../../scripts/lib/network-messages.ts';
import { testSandbox } from '../sandbox/parser-fixtures.ts';

const TRACKER = parseDefinitionYaml(
  `name: Tracker
manufacturer: Acme
version: 1
parser: gps-tracker.js
parserFormat: ts013
dataPoints:
  - { name: Latitude, dataType: number, source: position.latitude }
  - { name: Longitude, dataType: number, source: position.longitude }
  - { name: First access point, dataType: integer, source: "accessPoints[0].rssi" }
  - { name: Signal, dataType: number, radio: rssi }
`,
  'tracker.yaml',
).spec;
const CODEC = readFileSync(new URL('../../fixtures/codecs/gps-tracker.js', import.meta.url), 'utf8');

/** A tracker frame: a fix at (52.3702157, 4.8951679), 12 m, one access point at -67 dBm. */
const FRAME = '1f370f8d02eaf17f000c01001122334455bd';

const trial = (payload: string, over: Partial<DefinitionTrialInput> = {}) =>
  tryDefinition(testSandbox(), {
    env: 'trials',
    spec: TRACKER,
    parserSource: CODEC,
    parserFilename: 'gps-tracker.js',
    payload,
    locale: 'en',
    ...over,
  });

const values = (report: ReturnType<typeof trial>) =>
  report.ok ? Object.fromEntries(report.dataPoints.map((p) => [p.sensorName, p.rawValue])) : report;

describe('a codec tried on one payload', () => {
  it('decodes bytes written in hex, with their port', () => {
    expect(values(trial(`3:${FRAME}`))).toEqual({
      Latitude: 52.3702157,
      Longitude: 4.8951679,
      'First access point': -67,
      Signal: null,
    });
  });

  it('decodes a network server message pasted as it is, its radio metadata included', () => {
    const message = ttsUplink({
      deviceId: 'tracker-1',
      devEui: '0004a30b001c0530',
      bytes: [...Buffer.from(FRAME, 'hex')],
      fPort: 3,
      fCnt: 9,
      receivedAt: '2026-12-02T06:00:00Z',
      gateways: [{ rssi: -101, snr: -3 }],
    });
    expect(values(trial(JSON.stringify(message)))).toMatchObject({ Latitude: 52.3702157, Signal: -101 });
  });

  it('refuses a payload that is neither a message nor hex with INVALID_INPUT', () => {
    expect(trial('{"deviceName":"x"}')).toMatchObject({ ok: false, code: 'INVALID_INPUT' });
  });
});

describe('a codec’s warnings in a trial', () => {
  it('come beside the data points it kept', () => {
    const report = trial('2:01', {
      parserSource:
        'function decodeUplink(input) { return { data: { position: { latitude: input.bytes[0] } }, warnings: ["no fix yet"] }; }',
    });
    expect(report).toMatchObject({ ok: true, warnings: ['no fix yet'] });
    expect(values(report)).toMatchObject({ Latitude: 1 });
  });
});
