/**
 * Recent payloads per device (VIGIL_DEVICE_RECENT_PAYLOADS): newest first, bounded in count and in
 * bytes (a long payload shortened and marked), with each one's outcome and statuses; none with 0.
 */
import { describe, expect, it } from 'vitest';
import { listRecentPayloads, RECENT_PAYLOADS_MAX_BYTES } from '../../src/worker/recent-payloads.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';

async function logged(p: Pipeline, env: string, count: number): Promise<void> {
  await eventually(async () => (await p.redis.llen(p.keys.ingestLog(env))) >= count, {
    message: `${count} ingestion log entries`,
  });
}

describe('recent payloads', () => {
  it('keeps the newest N payloads of a device with outcome and statuses, within 64 KiB', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', deviceRecentPayloads: 3 });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    for (const t of [20, 21, 26, 22]) {
      expect((await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: t }))).status).toBe(202);
    }
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 'warm' }));
    await logged(p, 'acme', 5);
    const recent = await listRecentPayloads(p.redis, p.keys, 'acme', 'd1');
    expect(recent.map((r) => JSON.parse(r.payload) as { Temperature: unknown }).map((j) => j.Temperature)).toEqual([
      'warm',
      22,
      26,
    ]);
    expect(recent[1]).toMatchObject({ outcome: 'accepted', statuses: { Temperature: 'SUCCESS' } });
    expect(recent[2]).toMatchObject({ outcome: 'accepted', statuses: { Temperature: 'WARNING' } });
    expect(recent[0]?.outcome).not.toBe('accepted');
    expect(recent[0]?.code).toBeTruthy();

    // A payload longer than its share (64 KiB / 3) is kept shortened, and says how long it was.
    const long = JSON.stringify({ deviceName: 'd1', Temperature: 20, Note: 'x'.repeat(40_000) });
    await p.post('gateway/submit', key, long);
    await logged(p, 'acme', 6);
    const [newest] = await listRecentPayloads(p.redis, p.keys, 'acme', 'd1');
    expect(newest?.payloadBytes).toBe(Buffer.byteLength(long));
    expect(long.startsWith(newest!.payload)).toBe(true);
    expect(newest!.payload.length).toBeLessThan(RECENT_PAYLOADS_MAX_BYTES / 3);
    const texts = await p.redis.lrange(p.keys.recentPayloads('acme', 'd1'), 0, -1);
    expect(texts.reduce((n, t) => n + Buffer.byteLength(t), 0)).toBeLessThanOrEqual(RECENT_PAYLOADS_MAX_BYTES);
  });

  it('keeps none with 0', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', deviceRecentPayloads: 0 });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
    await logged(p, 'acme', 1);
    expect(await p.redis.exists(p.keys.recentPayloads('acme', 'd1'))).toBe(0);
  });
});
