/**
 * The worker survives every hostile parser fixture: the failing payload is logged with its code and
 * the next good payload of the same device is processed.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/parsers/${name}.js`, import.meta.url), 'utf8');

async function lastLog(p: Pipeline, count: number) {
  return eventually(
    async () => {
      const lines = await p.redis.lrange(p.keys.ingestLog('acme'), 0, -1);
      return lines.length >= count ? readEntry(lines[0]!) : undefined;
    },
    { timeoutMs: 15_000, message: `${count} log entries` },
  );
}

const GOOD = 'return { Temperature: j.temperature, Humidity: j.humidity };';
/** Fixtures with a good path use it for `temperature` payloads; the others get one here. */
const CASES: { name: string; source: string; bad: unknown; code: string }[] = [
  {
    name: 'throws',
    source: `function parsePayload(s) { const j = JSON.parse(s); if (j.fail) throw new Error('boom'); ${GOOD} }`,
    bad: { fail: true },
    code: 'PARSER_ERROR',
  },
  { name: 'loops', source: fixture('loops'), bad: { loop: true }, code: 'PARSER_TIMEOUT' },
  { name: 'allocates', source: fixture('allocates'), bad: { allocate: true }, code: 'PARSER_MEMORY' },
  {
    name: 'non-object',
    source: `function parsePayload(s) { const j = JSON.parse(s); if (j.kind) return [1, 2]; ${GOOD} }`,
    bad: { kind: 'array' },
    code: 'PARSER_BAD_RESULT',
  },
  {
    name: 'recursion',
    source: `function d(n) { return d(n + 1) + 1; }\nfunction parsePayload(s) { const j = JSON.parse(s); if (j.deep) return d(0); ${GOOD} }`,
    bad: { deep: true },
    code: 'PARSER_ERROR',
  },
  {
    name: 'giant-result',
    source: `function parsePayload(s) { const j = JSON.parse(s); if (j.giant) return { Blob: 'x'.repeat(2 * 1024 * 1024) }; ${GOOD} }`,
    bad: { giant: true },
    code: 'PARSER_BAD_RESULT',
  },
];

describe('worker with hostile parsers', () => {
  it('logs each failure with its code and processes the next good payload', { timeout: 60_000 }, async () => {
    // A CPU limit well above what a stack overflow takes on a loaded machine, so that recursion
    // ends in RangeError (PARSER_ERROR) and only the endless loop hits the limit. No catalog cache:
    // each step reads the definition just applied. The lease as shipped: on a starved machine the
    // endless loop's step took over 2 s, the pipeline's usual lease, and was fenced off again and
    // again (redelivered, never logged) until the parser was suspended.
    const p = await startPipeline({
      roles: 'gateway,worker',
      sandboxTimeoutMs: 1000,
      catalogCacheMs: 0,
      partitionLeaseMs: 10_000,
    });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    let entries = 0;
    for (const c of CASES) {
      await p.admin.applyDefinition(
        { kind: 'private', env: 'acme' },
        { ...COMFORT_SPEC, version: c.name },
        c.source,
      );
      await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', ...(c.bad as object) }));
      entries += 1;
      const failed = await lastLog(p, entries);
      expect(failed, c.name).toMatchObject({ outcome: 'rejected', code: c.code });
      const temperature = 10 + entries;
      await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', temperature, humidity: 40 }));
      entries += 1;
      expect(await lastLog(p, entries), c.name).toMatchObject({ outcome: 'accepted' });
      expect(await p.redis.hget(p.keys.deviceState('acme', 'd1'), 'Temperature|v')).toBe(String(temperature));
    }
  });

  it('reports a parser that reaches for process, require and timers as finding nothing', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, COMFORT_SPEC, fixture('touches-process'));
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1' }));
    const entry = await lastLog(p, 1);
    // Whatever it returned, it did not get the host's objects, and the worker carried on.
    expect(
      entry.code === null || entry.code === 'UNKNOWN_DATA_POINT' || entry.code.startsWith('PARSER_'),
    ).toBe(true);
    expect(await p.redis.exists(p.keys.deviceState('acme', 'd1'))).toBe(1);
  });
});
