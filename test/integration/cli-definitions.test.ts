import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createKeys } from '../../src/keys.ts';
import { TEST_SECRETS_KEY } from '../support/alerting.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

// Each test starts `vigil` processes one after another, a Node start each: on a loaded machine
// that is minutes of bounded work, not a wait.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let cli: CliHarness;
let keys: ReturnType<typeof createKeys>;
let dir: string;

const PARSER = 'function parsePayload(payloadStr) {\n  return JSON.parse(payloadStr);\n}\n';
const yaml = (name: string, dataPoints: string, parser = 'parser.js') =>
  `name: ${name}\nmanufacturer: Acme\nversion: "1"\nparser: ${parser}\ndataPoints:\n${dataPoints}`;
const GOOD_POINTS = `  - name: Temperature
    dataType: temperature
    hysteresis: 0.5
    thresholds:
      - { status: WARNING, above: 25 }
      - { status: CRITICAL, above: 30, description: Overheating }
  - name: Door
    dataType: boolean
`;

/** Writes a definition YAML (and its parser) into the temp dir; returns the YAML path. */
function write(file: string, text: string, parser?: { file: string; source: string }): string {
  if (parser) writeFileSync(join(dir, parser.file), parser.source);
  writeFileSync(join(dir, file), text);
  return join(dir, file);
}

function expectRefusal(r: { code: number; stderr: string }, reason: RegExp) {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^vigil: /);
  expect(r.stderr).toMatch(reason);
}

beforeAll(async () => {
  // The demo provisioning has a webhook channel: its secret needs a key, its URL is the demo
  // receiver's, 127.0.0.1:8099.
  cli = createCliHarness({
    VIGIL_SECRETS_KEY: TEST_SECRETS_KEY,
    VIGIL_NOTIFY_ALLOWED_HOSTS: '127.0.0.1:8099',
  });
  keys = createKeys(cli.prefix);
  dir = mkdtempSync(join(tmpdir(), 'vigil-defs-'));
  writeFileSync(join(dir, 'parser.js'), PARSER);
  const r = await Promise.all([
    cli.run(['env', 'create', 'one']),
    cli.run(['env', 'create', 'two', '--locale', 'nl']),
  ]);
  expect(r.map((x) => x.code)).toEqual([0, 0]);
});
afterAll(async () => {
  await cli.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('vigil definition apply', () => {
  it('stores a definition, writes nothing when unchanged, and makes a new version on change', async () => {
    const file = write('good.yaml', yaml('Room', GOOD_POINTS));
    type Applied = { version: number; published: number; created: boolean; changed: boolean };
    const first = await cli.json<Applied>(['definition', 'apply', file, '--env', 'one']);
    expect(first).toMatchObject({ version: 1, published: 1, created: true, changed: true });
    const stored = await cli.redis.hgetall(keys.definition({ kind: 'private', env: 'one' }, 'Room'));
    expect(Object.keys(stored).sort()).toEqual([
      'latest',
      'parser',
      'publishedUTC',
      'revision',
      'spec',
      'updatedUTC',
      'version',
    ]);
    expect(stored.parser).toBe(PARSER);
    expect(JSON.parse(stored.spec ?? '{}')).toMatchObject({
      name: 'Room',
      dataPoints: [{ name: 'Temperature' }, { name: 'Door' }],
    });
    const before = await cli.snapshot();

    const again = await cli.json<Applied>(['definition', 'apply', file, '--env', 'one']);
    expect(again).toMatchObject({ version: 1, published: 1, created: false, changed: false });
    expect(await cli.snapshot()).toEqual(before);

    write('good.yaml', yaml('Room', GOOD_POINTS, 'parser2.js'), {
      file: 'parser2.js',
      source: `// v2\n${PARSER}`,
    });
    const changed = await cli.json<Applied>(['definition', 'apply', file, '--env', 'one']);
    expect(changed).toMatchObject({ version: 2, published: 2, created: true });
    const draft = await cli.json<Applied>([
      ...[
        'definition',
        'apply',
        write('good.yaml', yaml('Room', GOOD_POINTS.replace('above: 25', 'above: 26'))),
        '--env',
      ],
      ...['one', '--draft', '--note', 'try 26'],
    ]);
    expect(draft).toMatchObject({ version: 3, published: 2, created: true });
    const versions = await cli.json<{ version: number; published: boolean; note: string }[]>([
      ...['definition', 'versions', 'Room', '--env', 'one'],
    ]);
    expect(versions.map((v) => [v.version, v.published, v.note])).toEqual([
      [3, false, 'try 26'],
      [2, true, ''],
      [1, false, ''],
    ]);
  });

  it('refuses bad definitions with a one-line reason and writes nothing', async () => {
    await cli.json(['definition', 'apply', write('base.yaml', yaml('Base', GOOD_POINTS)), '--env', 'one']);
    const before = await cli.snapshot();
    const apply = (file: string, ...scope: string[]) =>
      cli.run(['definition', 'apply', file, ...(scope.length ? scope : ['--env', 'one'])]);
    const results = await Promise.all([
      apply(write('yaml-error.yaml', 'name: X\ndataPoints: [\n  - oops: {\n')),
      apply(
        write('syntax.yaml', yaml('Syn', GOOD_POINTS, 'broken.js'), {
          file: 'broken.js',
          source: 'function parsePayload(s) {\n  return { a: 1 ;\n}\n',
        }),
      ),
      apply(write('type.yaml', yaml('Typ', '  - name: T\n    dataType: temp\n'))),
      apply(
        write(
          'threshold.yaml',
          yaml(
            'Thr',
            '  - name: T\n    dataType: number\n    thresholds:\n      - { status: WARNING, above: high }\n',
          ),
        ),
      ),
      apply(write('noparser.yaml', yaml('NoP', GOOD_POINTS, 'missing.js'))),
      apply(join(dir, 'good.yaml'), '--env', 'nowhere'),
      apply(join(dir, 'good.yaml'), '--env', 'one', '--public'),
      apply(write('soon.yaml', yaml('Soon', GOOD_POINTS.replace('above: 30,', 'above: 30, for: soon,')))),
      apply(
        write(
          'stale.yaml',
          yaml('Stl', '  - name: T\n    dataType: number\n    stale: { after: 0m, status: WARNING }\n'),
        ),
      ),
    ]);
    const [yamlError, syntax, dataType, threshold, noParser, unknownEnv, bothScopes, soon, stale] = results;
    expectRefusal(yamlError, /yaml-error\.yaml:\d+:\d+/);
    expectRefusal(syntax, /SyntaxError.*broken\.js:2:\d+/);
    expectRefusal(dataType, /unknown data type "temp"/);
    expectRefusal(threshold, /above: must be a number|must be a number/);
    expectRefusal(noParser, /missing\.js: no such file/);
    expectRefusal(unknownEnv, /unknown environment/);
    expect(bothScopes.code).toBe(2);
    expectRefusal(
      soon,
      /soon\.yaml: dataPoints\[0\]\.thresholds\[1\]\.for: must be a duration like 90s, 10m or 2h, got "soon" \(line \d+, column \d+\)/,
    );
    expectRefusal(stale, /stale\.yaml: dataPoints\[0\]\.stale\.after: must be longer than 0, got "0m"/);
    expect(await cli.snapshot()).toEqual(before);
  });
});

describe('private and public definitions', () => {
  it('are visible only in their environment, or everywhere when public; deleting one in use is refused', async () => {
    const file = write('shared.yaml', yaml('Shared', GOOD_POINTS));
    await cli.json(['definition', 'apply', file, '--env', 'one']);
    const device = (env: string, name: string, ...extra: string[]) =>
      cli.run(['device', 'create', '--env', env, '--name', name, '--definition', 'Shared', ...extra]);
    const [own, foreign] = await Promise.all([device('one', 'd1'), device('two', 'd2')]);
    expect(own.code, own.stderr).toBe(0);
    expectRefusal(foreign, /no definition Shared \(private to two\)/);

    await cli.json(['definition', 'apply', file, '--public']);
    const viaPublic = await device('two', 'd2', '--public-definition');
    expect(viaPublic.code, viaPublic.stderr).toBe(0);

    const [listTwo, listOne, publicOnly] = await Promise.all([
      cli.json<{ definitionName: string; definitionIsPublic: boolean }[]>([
        'definition',
        'list',
        '--env',
        'two',
      ]),
      cli.json<{ definitionName: string; definitionIsPublic: boolean }[]>([
        'definition',
        'list',
        '--env',
        'one',
      ]),
      cli.json<{ definitionName: string; definitionIsPublic: boolean }[]>(['definition', 'list']),
    ]);
    expect(listTwo.map((d) => [d.definitionName, d.definitionIsPublic])).toEqual([['Shared', true]]);
    expect(listOne.filter((d) => d.definitionName === 'Shared').map((d) => d.definitionIsPublic)).toEqual([
      false,
      true,
    ]);
    expect(publicOnly.map((d) => d.definitionName)).toEqual(['Shared']);

    const [inUse, showTwo] = await Promise.all([
      cli.run(['definition', 'delete', 'Shared', '--public']),
      cli.run(['definition', 'show', 'Shared', '--env', 'two']),
    ]);
    expectRefusal(inUse, /used by 1 device\(s\): two\/d2/);
    expectRefusal(showTwo, /no definition Shared \(private to two\)/);
    expect((await cli.run(['device', 'delete', '--env', 'two', '--name', 'd2'])).code).toBe(0);
    expect((await cli.run(['definition', 'delete', 'Shared', '--public'])).code).toBe(0);
    expect(await cli.redis.exists(keys.definition({ kind: 'public' }, 'Shared'))).toBe(0);
  });
});

describe('vigil definition test', () => {
  it('prints each data point converted, formatted and with its status', async () => {
    const file = write('test.yaml', yaml('Tested', GOOD_POINTS));
    const payload = JSON.stringify({ Temperature: '31.26', Door: 'on', Humidity: 3 });
    const [text, json, nl] = await Promise.all([
      cli.run(['definition', 'test', file, '--payload', payload]),
      cli.json<{ ok: true; dataPoints: Record<string, unknown>[]; unknownKeys: string[] }>([
        'definition',
        'test',
        file,
        '--payload',
        payload,
      ]),
      cli.run(['definition', 'test', file, '--payload', payload, '--locale', 'nl']),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/Temperature\s+31\.3 °C\s+CRITICAL\s+\(Overheating\)/);
    expect(text.stdout).toMatch(/Door\s+true\s+SUCCESS/);
    expect(text.stdout).toContain('UNKNOWN_DATA_POINT): Humidity');
    expect(nl.stdout).toContain('31,3 °C');
    expect(json.dataPoints).toEqual([
      expect.objectContaining({
        sensorName: 'Temperature',
        rawValue: 31.26,
        currentValue: '31.3 °C',
        currentStatus: 'CRITICAL',
      }),
      expect.objectContaining({
        sensorName: 'Door',
        rawValue: true,
        currentValue: 'true',
        currentStatus: 'SUCCESS',
      }),
    ]);
    expect(json.unknownKeys).toEqual(['Humidity']);
  });

  it('shows a rule that waits as pending, beside the status the value gets at once', async () => {
    const file = write(
      'waits.yaml',
      yaml(
        'Waits',
        GOOD_POINTS.replace(
          'above: 30, description: Overheating',
          'above: 30, for: 10m, description: Overheating',
        ),
      ),
    );
    const payload = JSON.stringify({ Temperature: 31 });
    const [text, json] = await Promise.all([
      cli.run(['definition', 'test', file, '--payload', payload]),
      cli.json<{ dataPoints: Record<string, unknown>[] }>(['definition', 'test', file, '--payload', payload]),
    ]);
    expect(text.stdout).toMatch(/Temperature\s+31\.0 °C\s+WARNING\s+\(Above 25 °C\)/);
    expect(text.stdout).toMatch(/\n\s+pending: CRITICAL \(Overheating for 10 min\) if the value holds\n/);
    expect(json.dataPoints[0]).toMatchObject({
      currentStatus: 'WARNING',
      reason: 'Above 25 °C',
      waiting: [{ status: 'CRITICAL', reason: 'Overheating for 10 min', forMs: 600_000 }],
    });
  });

  it('shows the converted values of data points named like Object.prototype members', async () => {
    const points = `  - name: constructor
    dataType: temperature
    thresholds:
      - { status: WARNING, above: 25 }
  - name: __proto__
    dataType: integer
  - name: hasOwnProperty
    dataType: boolean
`;
    const file = write('special.yaml', yaml('toString', points));
    const payload = '{"constructor": 26.04, "__proto__": "41.6", "hasOwnProperty": "on", "valueOf": 1}';
    const [text, json] = await Promise.all([
      cli.run(['definition', 'test', file, '--payload', payload]),
      cli.json<{ ok: true; dataPoints: Record<string, unknown>[]; unknownKeys: string[] }>([
        'definition',
        'test',
        file,
        '--payload',
        payload,
      ]),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/constructor\s+26\.0 °C\s+WARNING\s+\(Above 25 °C\)/);
    expect(json.dataPoints).toEqual([
      expect.objectContaining({ sensorName: 'constructor', rawValue: 26.04, currentStatus: 'WARNING' }),
      expect.objectContaining({ sensorName: '__proto__', rawValue: 42, currentValue: '42' }),
      expect.objectContaining({ sensorName: 'hasOwnProperty', rawValue: true, currentValue: 'true' }),
    ]);
    expect(json.unknownKeys).toEqual(['valueOf']);
  });

  it("reports the parser's error with its line and exits 1", async () => {
    const file = write('throws.yaml', yaml('Throws', GOOD_POINTS, 'throws.js'), {
      file: 'throws.js',
      source: 'function parsePayload(s) {\n  const x = 1;\n  throw new Error("bad payload " + s);\n}\n',
    });
    const r = await cli.run(['definition', 'test', file, '--payload', '{}']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/PARSER_ERROR: Error: bad payload \{\} \(at throws\.js:3:\d+\)/);
  });
});

describe('vigil preparser', () => {
  it('sets a pre-parser disabled by default, enables and disables it, refusing syntax errors', async () => {
    writeFileSync(
      join(dir, 'pre.js'),
      'function parsePayload(s) { return { deviceName: "x", payload: s }; }\n',
    );
    writeFileSync(join(dir, 'pre-broken.js'), 'function parsePayload(s) {\n  return [;\n}\n');
    const [set, broken] = await Promise.all([
      cli.json<{ revision: number; enabled: boolean }>([
        'preparser',
        'set',
        join(dir, 'pre.js'),
        '--env',
        'one',
      ]),
      cli.run(['preparser', 'set', join(dir, 'pre-broken.js'), '--env', 'two']),
    ]);
    expect(set).toMatchObject({ revision: 1, enabled: false });
    expectRefusal(broken, /pre-broken\.js:2:\d+/);
    expect(await cli.redis.exists(keys.preparser('two'))).toBe(0);
    await cli.run(['preparser', 'enable', '--env', 'one']);
    expect(await cli.redis.hgetall(keys.preparser('one'))).toMatchObject({ enabled: '1', revision: '1' });
    await cli.run(['preparser', 'disable', '--env', 'one']);
    expect(await cli.redis.hget(keys.preparser('one'), 'enabled')).toBe('0');
  });
});

describe('vigil provision apply', () => {
  it('applies the demo, and a second run reports 0 changes and leaves Redis identical', async () => {
    const demo = join(dir, 'demo');
    cpSync('config/provisioning/demo', demo, { recursive: true });
    const first = await cli.json<{ changes: number; details: string[] }>(['provision', 'apply', demo]);
    expect(first.changes).toBeGreaterThanOrEqual(8);
    expect(first.details).toContain('environment demo (locale en)');
    const before = await cli.snapshot();
    const second = await cli.run(['provision', 'apply', demo]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('0 changes');
    expect(await cli.snapshot()).toEqual(before);

    const devices = await cli.json<{ deviceName: string; displayName: string }[]>([
      'device',
      'list',
      '--env',
      'demo',
    ]);
    expect(devices.map((d) => d.displayName)).toEqual([
      'Hallway',
      'Open-plan R&D Office',
      'Reception',
      'Greenhouse (LoRaWAN)',
    ]);
    expect(await cli.redis.hget(keys.deviceThresholds('demo', 'device_2_rd_office'), 'CO2')).toContain(
      '"above":800',
    );
    expect(await cli.redis.hget(keys.preparser('demo'), 'enabled')).toBe('0');
  });

  it('validates everything before writing anything', async () => {
    const bad = join(dir, 'bad');
    cpSync('config/provisioning/demo', bad, { recursive: true });
    writeFileSync(
      join(bad, 'environments.yaml'),
      [
        'environments:',
        '  - name: fresh',
        '    definitions: [definitions/comfort-sensors.yaml]',
        '    devices:',
        '      - { name: ok, definition: ComfortSensors }',
        '      - name: wrong',
        '        definition: ComfortSensors',
        '        thresholds: { CO2: [{ status: WARNING, above: lots }] }',
      ].join('\n'),
    );
    const before = await cli.snapshot();
    const dup = join(dir, 'dup');
    cpSync(bad, dup, { recursive: true });
    writeFileSync(
      join(dup, 'environments.yaml'),
      'environments:\n  - name: fresh\n    definitions: [definitions/comfort-sensors.yaml]\n' +
        '    devices:\n      - { name: twin, definition: ComfortSensors }\n      - { name: twin, definition: ComfortSensors }\n',
    );
    const [wrongThreshold, twins] = await Promise.all([
      cli.run(['provision', 'apply', bad]),
      cli.run(['provision', 'apply', dup]),
    ]);
    expectRefusal(wrongThreshold, /fresh: device wrong: CO2: .*must be a number/);
    expectRefusal(twins, /fresh: device twin is listed twice/);
    expect(await cli.snapshot()).toEqual(before);
  });
});
