/**
 * A data point stored in a layout this Vigil does not know (written by a newer version, or waiting
 * for a migration) is never taken for a fresh SUCCESS data point: the worker applies nothing for
 * its device, creates no event, and retries the step with its payloads still queued (not
 * dead-lettered); the read API refuses to show that device's state rather than make a status up.
 */
import { describe, expect, it } from 'vitest';
import { countEntries } from '../../src/queue/ingest-queue.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';

/** A layout byte no version of Vigil has written. */
const UNKNOWN_LAYOUT = 9;

async function metric(p: Pipeline, name: string): Promise<number> {
  const text = await (await fetch(`${p.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const failedSteps = async (p: Pipeline): Promise<number> => {
  const text = await (await fetch(`${p.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('vigil_worker_steps_total{result="failed"}'));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
};

describe('a data point stored in an unknown layout', () => {
  it(
    'creates no event and no change, keeps the payload queued for retry, and is not shown as SUCCESS',
    { timeout: 60_000 },
    async () => {
      const p = await startPipeline({ roles: 'gateway,worker,api', jobBackoffMs: 100, jobBackoffMaxMs: 200 });
      const { key } = await provisionComfort(p, 'acme', ['dev1']);
      const { token } = await p.admin.createToken('acme', 'test', 0);
      const stateKey = p.keys.deviceState('acme', 'dev1');
      const events = () => p.redis.zcard(p.keys.envEvents('acme'));

      expect(
        (await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'dev1', Temperature: 31 }))).status,
      ).toBe(202);
      await eventually(async () => ((await events()) === 1 ? true : undefined), {
        timeoutMs: 15_000,
        message: 'the CRITICAL event',
      });
      await eventually(
        async () =>
          (await countEntries(p.redis, p.keys, p.config.queuePartitions)) === 0 ? true : undefined,
        { timeoutMs: 15_000, message: 'the first payload acknowledged' },
      );

      // The same data point as a newer Vigil could have left it: another layout byte, written
      // under a version of its own, as every writer of a device's state does.
      const packed = (await p.redis.hgetBuffer(stateKey, 'Temperature|p'))!;
      const future = Buffer.from(packed);
      future[0] = UNKNOWN_LAYOUT;
      await p.redis.hset(stateKey, 'Temperature|p', future, '@ver', 'newer.1');
      const before = await p.redis.hgetallBuffer(stateKey);

      // Still CRITICAL: read as a fresh SUCCESS data point, this would be a new CRITICAL event.
      expect(
        (await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'dev1', Temperature: 32 }))).status,
      ).toBe(202);
      await eventually(
        async () =>
          (await failedSteps(p)) >= 3 || (await countEntries(p.redis, p.keys, p.config.queuePartitions)) === 0
            ? true
            : undefined,
        { timeoutMs: 20_000, message: 'the step tried three times, or acknowledged' },
      );
      expect(await events()).toBe(1);
      expect(await p.redis.hgetallBuffer(stateKey)).toEqual(before);
      expect(await failedSteps(p)).toBeGreaterThanOrEqual(3);
      expect(await countEntries(p.redis, p.keys, p.config.queuePartitions)).toBe(1);
      expect(await p.redis.xlen(p.keys.deadLetters())).toBe(0);
      expect(await metric(p, 'vigil_worker_payload_failures_total')).toBe(0);
      expect(await p.redis.llen(p.keys.ingestLog('acme'))).toBe(1);

      // The read API does not make a status up for it.
      const reads = {
        '/sensors/list': { deviceName: 'dev1' },
        '/sensors/details': { deviceName: 'dev1', sensorName: 'Temperature' },
        '/sensors/batchList': { devices: ['dev1'] },
      };
      for (const [path, attrs] of Object.entries(reads)) {
        const res = await fetch(`${p.apiUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(attrs),
        });
        const body = (await res.json()) as { error?: { code: string; message: string } };
        expect([path, res.status, body.error?.code]).toEqual([path, 503, 'STATE_LAYOUT_UNKNOWN']);
      }

      // Once the state is readable again (a migration ran), the retried step applies the value.
      await p.redis.hset(stateKey, 'Temperature|p', packed, '@ver', 'migrated.1');
      await eventually(
        async () => ((await p.redis.hget(stateKey, 'Temperature|v')) === '32' ? true : undefined),
        { timeoutMs: 15_000, message: 'the retried payload applied' },
      );
      expect(await events()).toBe(1);
      expect(await p.redis.xlen(p.keys.deadLetters())).toBe(0);
    },
  );
});
