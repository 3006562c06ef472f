import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/errors/app-error.ts';
import { parseDefinitionYaml } from '../../../src/domain/definition-spec.ts';

const COMFORT = `name: ComfortSensors          # unique per environment (private) or globally (public)
manufacturer: Acme
version: "1.2"
icon: thermometer             # optional
parser: comfort-sensors.js    # defines parsePayload(payloadStr, payloadRaw)
availability: { timeoutMinutes: 60, status: ERROR }
dataPoints:
  - name: Temperature         # sensorName; case-sensitive key of parsePayload's result
    displayName: Temperature
    dataType: temperature
    hysteresis: 0.5           # optional, in the data point's unit
    thresholds:
      - { status: WARNING,  above: 25 }
      - { status: CRITICAL, above: 30, description: Overheating }
      - { status: WARNING,  below: 15 }
  - name: Door
    dataType: string
    thresholds:
      - { status: INFO, equals: open }
`;

function refusal(text: string): string {
  try {
    parseDefinitionYaml(text, 'comfort.yaml');
  } catch (err) {
    if (isAppError(err) && err.code === 'INVALID_INPUT') return err.message;
    throw err;
  }
  throw new Error('expected INVALID_INPUT');
}

describe('parseDefinitionYaml', () => {
  it('reads the §4 example with defaults filled in', () => {
    expect(parseDefinitionYaml(COMFORT, 'comfort.yaml')).toEqual({
      parserFile: 'comfort-sensors.js',
      spec: {
        name: 'ComfortSensors',
        manufacturer: 'Acme',
        version: '1.2',
        icon: 'thermometer',
        availability: { timeoutMinutes: 60, status: 'ERROR' },
        dataPoints: [
          {
            name: 'Temperature',
            displayName: 'Temperature',
            dataType: 'temperature',
            hysteresis: 0.5,
            thresholds: [
              { status: 'WARNING', above: 25 },
              { status: 'CRITICAL', above: 30, description: 'Overheating' },
              { status: 'WARNING', below: 15 },
            ],
          },
          {
            name: 'Door',
            displayName: 'Door',
            dataType: 'string',
            hysteresis: 0,
            thresholds: [{ status: 'INFO', equals: 'open' }],
          },
        ],
      },
    });
  });

  it('turns a numeric version into text and allows fractional timeouts and no availability', () => {
    const text = COMFORT.replace('version: "1.2"', 'version: 3').replace(
      'availability: { timeoutMinutes: 60, status: ERROR }',
      'availability: { timeoutMinutes: 0.05 }',
    );
    const { spec } = parseDefinitionYaml(text);
    expect(spec.version).toBe('3');
    expect(spec.availability).toEqual({ timeoutMinutes: 0.05 });
    const without = parseDefinitionYaml(COMFORT.replace(/^availability:.*\n/m, '')).spec;
    expect(without.availability).toBeUndefined();
    expect(without.icon).toBe('thermometer');
  });

  it('treats empty optional fields as absent', () => {
    const text = [
      'name: Minimal',
      'manufacturer: Acme',
      'version: 1',
      'icon:',
      'parser: minimal.js',
      'availability:',
      'dataPoints:',
      '  - name: Level',
      '    displayName:',
      '    dataType: number',
      '    hysteresis:',
      '    thresholds:',
    ].join('\n');
    expect(parseDefinitionYaml(text).spec).toEqual({
      name: 'Minimal',
      manufacturer: 'Acme',
      version: '1',
      dataPoints: [
        { name: 'Level', displayName: 'Level', dataType: 'number', hysteresis: 0, thresholds: [] },
      ],
    });
  });

  it('reports a YAML syntax error with file, line and column', () => {
    const broken = COMFORT.replace(
      '      - { status: WARNING,  below: 15 }',
      '      - { status: WARNING,  below: 15',
    );
    expect(refusal(broken)).toMatch(/^comfort\.yaml:\d+:\d+: YAML syntax error: /);
    expect(refusal('name: a\nname: b\n')).toBe(
      'comfort.yaml:2:1: YAML syntax error: Map keys must be unique',
    );
  });

  it('names an unknown data type and lists the valid ones, with its line', () => {
    const message = refusal(COMFORT.replace('dataType: string', 'dataType: temp'));
    expect(message).toBe(
      'comfort.yaml: dataPoints[1].dataType: unknown data type "temp"; expected one of string, integer, number, boolean, temperature, humidity, illuminance, millivolts, co2, occupancy, gps (line 17, column 15)',
    );
  });

  it.each([
    ['an empty file', '', /^comfort\.yaml: must be a YAML mapping/],
    ['a list', '- a\n- b\n', /must be a YAML mapping/],
    ['a missing name', COMFORT.replace(/^name:.*\n/, ''), /^comfort\.yaml: name: is required/],
    [
      'a bad definition name',
      COMFORT.replace('name: ComfortSensors', 'name: Comfort/Sensors'),
      /name: invalid definition name "Comfort\/Sensors"/,
    ],
    ['a missing parser', COMFORT.replace(/^parser:.*\n/m, ''), /parser: is required/],
    ['an unknown top-level field', `${COMFORT}colour: red\n`, /^comfort\.yaml: unknown field "colour"/],
    [
      'a zero timeout',
      COMFORT.replace('timeoutMinutes: 60', 'timeoutMinutes: 0'),
      /availability\.timeoutMinutes: must be > 0 \(line 6/,
    ],
    [
      'a bad availability status',
      COMFORT.replace('status: ERROR }', 'status: SUCCESS }'),
      /availability\.status: must be one of INFO, WARNING, ERROR, CRITICAL/,
    ],
    [
      'no data points',
      COMFORT.replace(/dataPoints:[\s\S]*$/, 'dataPoints: []\n'),
      /dataPoints: needs at least one data point/,
    ],
    [
      'a bad data point name',
      COMFORT.replace('- name: Door', '- name: " Door"'),
      /dataPoints\[1\]\.name: invalid data point name/,
    ],
    [
      'an unknown data point field',
      COMFORT.replace('    dataType: string', '    dataType: string\n    unit: x'),
      /dataPoints\[1\]: unknown field "unit"/,
    ],
    [
      'a negative hysteresis',
      COMFORT.replace('hysteresis: 0.5', 'hysteresis: -1'),
      /dataPoints\[0\]\.hysteresis: must be a number ≥ 0 \(line 11/,
    ],
    [
      'a bad rule status',
      COMFORT.replace('status: CRITICAL', 'status: FATAL'),
      /^comfort\.yaml: dataPoints\[0\]\.thresholds\[1\]\.status: must be one of .*got "FATAL" \(line 14, column \d+\)$/,
    ],
    [
      'a rule with two limits',
      COMFORT.replace('above: 30,', 'above: 30, below: 2,'),
      /dataPoints\[0\]\.thresholds\[1\]: needs exactly one of above, below or equals/,
    ],
    [
      'above on a string',
      COMFORT.replace('equals: open', 'above: 3'),
      /dataPoints\[1\]\.thresholds\[0\]\.above: above needs a numeric data type/,
    ],
    [
      'a thresholds mapping',
      COMFORT.replace(
        / {4}thresholds:\n {6}- \{ status: INFO, equals: open \}\n/,
        '    thresholds: { status: INFO }\n',
      ),
      /dataPoints\[1\]\.thresholds: must be a list of rules/,
    ],
    [
      'a duplicate data point',
      COMFORT.replace('- name: Door', '- name: Temperature'),
      /dataPoints\[1\]\.name: duplicate data point name "Temperature" \(also dataPoints\[0\]\) \(line 16/,
    ],
    [
      'a duration that is no duration',
      COMFORT.replace('above: 30,', 'above: 30, for: soon,'),
      /^comfort\.yaml: dataPoints\[0\]\.thresholds\[1\]\.for: must be a duration like 90s, 10m or 2h, got "soon" \(line 14, column \d+\)$/,
    ],
    [
      'a duration without a unit',
      COMFORT.replace('above: 30,', 'above: 30, for: 10,'),
      /dataPoints\[0\]\.thresholds\[1\]\.for: must be a duration like 90s, 10m or 2h, got 10 /,
    ],
    [
      'a duration of 0',
      COMFORT.replace('above: 30,', 'above: 30, for: 0s,'),
      /dataPoints\[0\]\.thresholds\[1\]\.for: must be longer than 0, got "0s"/,
    ],
    [
      'a stale rule of 0',
      COMFORT.replace(
        '    hysteresis: 0.5',
        '    hysteresis: 0.5\n    stale: { after: 0m, status: WARNING }',
      ),
      /^comfort\.yaml: dataPoints\[0\]\.stale\.after: must be longer than 0, got "0m" \(line 12, column \d+\)$/,
    ],
    [
      'a stale rule with an unknown key',
      COMFORT.replace(
        '    hysteresis: 0.5',
        '    hysteresis: 0.5\n    stale: { after: 30m, level: WARNING }',
      ),
      /dataPoints\[0\]\.stale: unknown field "level" \(expected after, status\)/,
    ],
    [
      'a stale rule with a bad status',
      COMFORT.replace(
        '    hysteresis: 0.5',
        '    hysteresis: 0.5\n    stale: { after: 30m, status: SUCCESS }',
      ),
      /dataPoints\[0\]\.stale\.status: must be one of INFO, WARNING, ERROR, CRITICAL, got "SUCCESS"/,
    ],
    [
      'a rule with an unknown key',
      COMFORT.replace('above: 30,', 'above: 30, during: 10m,'),
      /dataPoints\[0\]\.thresholds\[1\]: unknown field "during"/,
    ],
  ])('refuses %s as INVALID_INPUT naming the place', (_what, text, message) => {
    expect(refusal(text)).toMatch(message);
  });

  it('reads rules that wait (for) and stale rules as milliseconds', () => {
    const text = COMFORT.replace(
      'above: 30, description: Overheating',
      'above: 30, for: 10m, description: Overheating',
    ).replace('    hysteresis: 0.5', '    hysteresis: 0.5\n    stale: { after: 90s }');
    const [temperature] = parseDefinitionYaml(text, 'comfort.yaml').spec.dataPoints;
    expect(temperature!.thresholds[1]).toEqual({
      status: 'CRITICAL',
      above: 30,
      description: 'Overheating',
      forMs: 600_000,
    });
    expect(temperature!.stale).toEqual({ afterMs: 90_000, status: 'WARNING' });
  });

  it('reads data points and a definition named like Object.prototype members', () => {
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];
    const text = `name: __proto__\nmanufacturer: Acme\nversion: 1\nparser: p.js\ndataPoints:\n${names
      .map((n) => `  - { name: ${n}, dataType: number, thresholds: [{ status: WARNING, above: 1 }] }\n`)
      .join('')}`;
    const { spec } = parseDefinitionYaml(text, 'special.yaml');
    expect(spec.name).toBe('__proto__');
    expect(spec.dataPoints.map((p) => [p.name, p.displayName, p.thresholds.length])).toEqual(
      names.map((n) => [n, n, 1]),
    );
    expect(refusal(`${text}  - { name: constructor, dataType: number }\n`)).toMatch(
      /duplicate data point name "constructor" \(also dataPoints\[0\]\)/,
    );
  });

  it('reads a codec definition with data points from paths and from radio metadata', () => {
    const { spec } = parseDefinitionYaml(
      `name: Tracker
manufacturer: Acme
version: 1
parser: tracker.js
parserFormat: ts013
dataPoints:
  - { name: Latitude, dataType: number, source: position.latitude }
  - { name: First channel, dataType: number, source: "channels[0].value" }
  - { name: Signal, dataType: number, radio: rssi, thresholds: [{ status: WARNING, below: -115 }] }
`,
      'tracker.yaml',
    );
    expect(spec.parserFormat).toBe('ts013');
    expect(spec.dataPoints.map((dp) => [dp.source, dp.radio])).toEqual([
      ['position.latitude', undefined],
      ['channels[0].value', undefined],
      [undefined, 'rssi'],
    ]);
    const plain = parseDefinitionYaml(
      COMFORT.replace('parser: comfort-sensors.js', 'parser: c.js\nparserFormat: parsePayload'),
      'c.yaml',
    );
    expect(plain.spec).not.toHaveProperty('parserFormat');
  });

  it('refuses an unknown parser format, a bad path, an unknown radio field, and both on one data point', () => {
    const withPoint = (dp: string, extra = '') =>
      `name: T\nmanufacturer: A\nversion: 1\nparser: t.js\n${extra}dataPoints:\n  - ${dp}\n`;
    expect(refusal(withPoint('{ name: A, dataType: number }', 'parserFormat: decodeUplink\n'))).toMatch(
      /^comfort\.yaml: parserFormat: /,
    );
    expect(refusal(withPoint('{ name: A, dataType: number, source: "a..b" }'))).toMatch(
      /dataPoints\[0\]\.source: /,
    );
    expect(refusal(withPoint('{ name: A, dataType: number, radio: rsssi }'))).toMatch(
      /dataPoints\[0\]\.radio: must be one of rssi, /,
    );
    expect(refusal(withPoint('{ name: A, dataType: number, radio: rssi, source: x }'))).toMatch(
      /dataPoints\[0\]\.radio: /,
    );
  });

  it('labels errors "definition" without a file name', () => {
    expect(() => parseDefinitionYaml('name: [')).toThrow(/^definition:1:\d+: YAML syntax error/);
  });
});
