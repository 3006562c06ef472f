/**
 * Trials off the event loop: the trial thread runs the worker's conversion and stops a runaway
 * parser at the workers' limit while the event loop goes on; callers' trials take turns; the queue
 * is bounded. And a replay's sampling: even across devices and, within a device, across time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../../src/domain/types.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { errorLocation, samplePayloads } from '../../../src/management/definition-trials.ts';
import { createTrialRunner, type TrialRunner } from '../../../src/management/trial-runner.ts';
import type { DefinitionTrialInput } from '../../../src/worker/definition-trial.ts';

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

const input = (parserSource: string, payload: string): DefinitionTrialInput => ({
  env: 'acme',
  spec: SPEC,
  parserSource,
  parserFilename: 'Probe.js',
  payload,
  locale: 'en',
  codeId: 'test:probe',
  revision: parserSource.length,
});

let runner: TrialRunner | undefined;
afterEach(async () => runner?.close());

describe('trial runner', () => {
  it("runs the worker's conversion in its thread", async () => {
    runner = createTrialRunner({
      sandbox: { timeoutMs: 50, memoryLimitMb: 32 },
      log: createLogger('silent'),
    });
    const parser =
      'function parsePayload(s) {\n  const j = JSON.parse(s);\n  return { Temperature: j.t };\n}';
    const [ok, failed] = await runner.run([input(parser, '{"t":26}'), input(parser, 'not json')]);
    expect(ok?.ok && ok.dataPoints[0]).toMatchObject({ currentValue: '26.0 °C', currentStatus: 'WARNING' });
    expect(failed).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    if (failed && !failed.ok)
      expect(errorLocation(failed.message, 'Probe.js')).toEqual({ line: 2, column: 18 });
  });

  it('stops a runaway parser at the time limit while the event loop goes on', async () => {
    runner = createTrialRunner({
      sandbox: { timeoutMs: 50, memoryLimitMb: 32 },
      log: createLogger('silent'),
    });
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 1);
    const reports = await runner.run(
      Array.from({ length: 4 }, (_, i) => input('function parsePayload(s) { for (;;) {} }', `{"n":${i}}`)),
    );
    clearInterval(timer);
    expect(reports.map((r) => r.ok || r.code)).toEqual(Array.from({ length: 4 }, () => 'PARSER_TIMEOUT'));
    // 4 × 50 ms of parser time, during which the timer kept firing.
    expect(ticks).toBeGreaterThan(20);
  });

  it('lets a Run in between the batches of a long replay', async () => {
    runner = createTrialRunner({
      sandbox: { timeoutMs: 50, memoryLimitMb: 32 },
      log: createLogger('silent'),
    });
    const order: string[] = [];
    const parser = 'function parsePayload(s) { return { Temperature: 1 }; }';
    const long = runner
      .run(Array.from({ length: 500 }, (_, i) => input(parser, `{"n":${i}}`)))
      .then(() => order.push('replay'));
    const one = runner.run([input(parser, '{}')]).then(() => order.push('run'));
    await Promise.all([long, one]);
    expect(order).toEqual(['run', 'replay']);
  });

  it('answers WORKBENCH_BUSY beyond what may wait', async () => {
    runner = createTrialRunner({
      sandbox: { timeoutMs: 50, memoryLimitMb: 32 },
      log: createLogger('silent'),
      maxWaiting: 10,
    });
    const parser = 'function parsePayload(s) { return {}; }';
    await expect(runner.run(Array.from({ length: 11 }, () => input(parser, '{}')))).rejects.toMatchObject({
      code: 'WORKBENCH_BUSY',
    });
  });
});

describe('replay sampling', () => {
  const list = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}${i}`);

  it('takes everything under the limit', () => {
    expect(samplePayloads([list('a', 2), list('b', 3)], 10)).toEqual([list('a', 2), list('b', 3)]);
  });

  it('shares the limit evenly, a short list leaving its share to the others, each share spread over time', () => {
    const sampled = samplePayloads([list('a', 2), list('b', 20), list('c', 20)], 10);
    expect(sampled.map((s) => s.length)).toEqual([2, 4, 4]);
    // The newest, the oldest and evenly between.
    expect(sampled[1]).toEqual(['b0', 'b6', 'b13', 'b19']);
  });

  it('beyond the limit in devices, takes evenly spaced devices, one payload each, at turning places', () => {
    const lists = Array.from({ length: 10 }, (_, d) => list(`d${d}-`, 5));
    const sampled = samplePayloads(lists, 4);
    expect(sampled.flat()).toEqual(['d0-0', 'd2-1', 'd5-2', 'd7-3']);
  });
});
