/**
 * The console's parser workbench: the workers' sandbox limits, one parser call at a time with the
 * event loop free in between (a replay cannot starve the API), and a bounded queue.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkbench, type Trial, type Workbench } from '../../../src/console/workbench.ts';
import type { DefinitionSpec } from '../../../src/domain/types.ts';
import { createLogger } from '../../../src/log/logger.ts';
import type { RecentPayload } from '../../../src/recent-payloads/recent-payload-codec.ts';

const SPEC: DefinitionSpec = {
  name: 'Probe',
  manufacturer: 'Test',
  version: '1',
  dataPoints: [
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 25 }],
    },
  ],
};

const trial = (parserSource: string): Trial => ({
  env: 'acme',
  session: 'a-session',
  locale: 'en',
  definition: { isPublic: false, env: 'acme', spec: SPEC, parserSource, version: 1, latest: 1, revision: 1, updatedUTC: '' },
});

const recent = (payload: string, statuses: RecentPayload['statuses'] = {}): RecentPayload => ({
  receivedMs: Date.now(),
  ingestId: `id-${payload}`,
  outcome: 'accepted',
  code: null,
  message: null,
  payload,
  statuses,
});

let bench: Workbench | undefined;
afterEach(() => bench?.close());

describe('workbench', () => {
  it('runs, converts, and replays with a verdict per payload', async () => {
    bench = createWorkbench({ sandbox: { timeoutMs: 50, memoryLimitMb: 32 }, log: createLogger('silent') });
    const t = trial('function parsePayload(s) { const j = JSON.parse(s); return { Temperature: j.t }; }');
    const run = await bench.run(t, '{"t":26}');
    expect(run.ok && run.dataPoints[0]).toMatchObject({ currentValue: '26.0 °C', currentStatus: 'WARNING' });
    const rows = await bench.replay(t, [
      recent('{"t":26}', { Temperature: 'SUCCESS' }),
      recent('{"t":20}', { Temperature: 'SUCCESS' }),
      recent('not json', { Temperature: 'SUCCESS' }),
      { ...recent('{"t":1'), payloadBytes: 90_000 },
    ]);
    expect(rows.map((r) => r.verdict)).toEqual(['changes', 'same', 'fails', 'skipped']);
    expect(rows[0]?.changes).toEqual([{ sensorName: 'Temperature', then: 'SUCCESS', now: 'WARNING' }]);
  });

  it('stops a runaway parser at the workers’ time limit and lets other work run between calls', async () => {
    bench = createWorkbench({ sandbox: { timeoutMs: 50, memoryLimitMb: 32 }, log: createLogger('silent') });
    const t = trial('function parsePayload(s) { for (;;) {} }');
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 1);
    const rows = await bench.replay(
      t,
      Array.from({ length: 6 }, (_, i) => recent(`{"n":${i}}`)),
    );
    clearInterval(timer);
    expect(rows.map((r) => r.verdict)).toEqual(Array.from({ length: 6 }, () => 'fails'));
    expect(rows[0]?.now).toMatchObject({ ok: false, code: 'PARSER_TIMEOUT' });
    // At least one turn of the event loop between two parser calls.
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it('answers WORKBENCH_BUSY beyond 64 waiting calls', async () => {
    bench = createWorkbench({ sandbox: { timeoutMs: 50, memoryLimitMb: 32 }, log: createLogger('silent') });
    const t = trial('function parsePayload(s) { return {}; }');
    const many = Array.from({ length: 65 }, (_, i) => recent(`{"n":${i}}`));
    await expect(bench.replay(t, many)).rejects.toMatchObject({ code: 'WORKBENCH_BUSY' });
  });
});
