/**
 * `vigil definition apply --dry-run`: the file replayed over the recent payloads of the
 * definition's devices beside the published version, the diff shown and nothing written — in the
 * direct mode (Redis) and the remote mode (a token over HTTP, no Redis within reach), the same
 * answer through the same operation, /definitions/replay.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { encodeRecentPayload } from '../../src/recent-payloads/recent-payload-codec.ts';
import { startApiHarness, type ApiHarness } from './api-harness.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

const SPEC: DefinitionSpec = {
  name: 'Boiler',
  manufacturer: 'Acme',
  version: '1',
  dataPoints: [
    {
      name: 'Pressure',
      displayName: 'Pressure',
      dataType: 'number',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 2.5 }],
    },
  ],
};
const PUBLISHED = 'function parsePayload(s) { return { Pressure: JSON.parse(s).p }; }\n';
/** The draft: warns above 2, and throws on a reading of zero. */
const DRAFT_YAML = `name: Boiler
manufacturer: Acme
version: "1"
parser: boiler.js
dataPoints:
  - name: Pressure
    dataType: number
    thresholds:
      - { status: WARNING, above: 2 }
`;
const DRAFT_PARSER = `function parsePayload(s) {
  const p = JSON.parse(s).p;
  if (p === 0) throw new Error('no pressure');
  return { Pressure: p };
}
`;

interface Diff {
  replayed: number;
  counts: Record<string, number>;
  rows: { verdict: string; deviceName: string }[];
}

let h: ApiHarness;
let cli: CliHarness;
let dir: string;
let file: string;
let direct: Record<string, string>;
let remote: Record<string, string>;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({ roles: 'api' }, (fn) => cleanups.push(fn));
  await h.seedEnvironment('acme');
  await h.admin.applyDefinition({ kind: 'private', env: 'acme' }, SPEC, PUBLISHED);
  const now = Date.now();
  for (const device of ['b1', 'b2']) {
    await h.admin.createDevice('acme', {
      name: device,
      displayName: device,
      definitionName: 'Boiler',
      definitionIsPublic: false,
    });
    const entries = ['{"p":1.5}', '{"p":2.2}', '{"p":0}'].map((payload, i) =>
      encodeRecentPayload(
        {
          item: {
            id: `${device}-${i}`,
            env: 'acme',
            gateway: 'submit',
            via: 'http',
            receivedMs: now - 1000 * (3 - i),
            body: payload,
            bodyIsHex: false,
            client: 'test',
          },
          payload,
          outcome: undefined,
          statuses: undefined,
        },
        64 * 1024,
      ),
    );
    await h.redis.lpush(h.keys.recentPayloads('acme', device), ...entries);
  }
  const { token } = await h.admin.createToken('acme', 'laptop', 0, ['read', 'write']);
  const vigil = await startVigil(h.config, createLogger('silent'));
  cleanups.push(() => vigil.close());
  dir = mkdtempSync(join(tmpdir(), 'vigil-dry-run-'));
  file = join(dir, 'boiler.yaml');
  writeFileSync(file, DRAFT_YAML);
  writeFileSync(join(dir, 'boiler.js'), DRAFT_PARSER);
  cli = createCliHarness();
  direct = { VIGIL_KEY_PREFIX: h.config.keyPrefix };
  remote = {
    VIGIL_REDIS_URL: 'redis://127.0.0.1:1',
    VIGIL_URL: `http://127.0.0.1:${vigil.ports.api}`,
    VIGIL_TOKEN: token,
  };
});
afterAll(async () => {
  await cli.close();
  for (const fn of cleanups.reverse()) await fn();
  rmSync(dir, { recursive: true, force: true });
});

/** The definition's head and versions, to see that nothing was written. */
async function stored() {
  const scope = { kind: 'private', env: 'acme' } as const;
  return {
    head: await h.redis.hgetall(h.keys.definition(scope, 'Boiler')),
    versions: await h.redis.hgetall(h.keys.definitionVersions(scope, 'Boiler')),
  };
}

describe('vigil definition apply --dry-run', () => {
  it.each([
    ['direct', () => direct],
    ['remote', () => remote],
  ])('shows the diff and writes nothing (%s mode)', async (_mode, env) => {
    const before = await stored();
    const json = await cli.run(['definition', 'apply', file, '--env', 'acme', '--dry-run', '--json'], env());
    expect(json.code, json.stderr).toBe(0);
    const diff = JSON.parse(json.stdout) as Diff;
    // 2.2 now warns; 0 now throws; 1.5 stays.
    expect([diff.replayed, diff.counts]).toEqual([
      6,
      { fails: 2, succeeds: 0, status: 2, value: 0, same: 2 },
    ]);
    const text = await cli.run(['definition', 'apply', file, '--env', 'acme', '--dry-run'], env());
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^dry run of Boiler \(environment acme\), nothing written: 6 recent payload\(s\) of 2 of 2 device\(s\)/,
    );
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}would now fail +2$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^fails +b\d .*PARSER_ERROR Error: no pressure \(at Boiler\.js:3:/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^status +b\d .*Pressure: 2\.2 SUCCESS → 2\.2 WARNING$/));
    expect(await stored()).toEqual(before);
  });
});
