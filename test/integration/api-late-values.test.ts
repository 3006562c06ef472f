/**
 * last24Hours stays exact when values arrive late: a value measured in an hour that has closed,
 * processed after the read API cached that hour, shows at the next request, in every API process.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { apiCall, processed, provisionBackfill, upload } from '../support/backfill.ts';
import { startPipeline } from '../support/pipeline.ts';

const H = 3_600_000;

interface Bucket {
  sUTC: number;
  count: number;
  total: number;
}

describe('last24Hours under late values', () => {
  it('shows a value measured in a closed hour at once, in every API process', async () => {
    const p = await startPipeline({ roles: 'gateway,worker,api' });
    const second = await startVigil({ ...p.config, roles: ['api'] }, createLogger('silent'));
    onTestFinished(() => second.close());
    const apis = [p.apiUrl, `http://127.0.0.1:${second.ports.api}`];
    const { key, token } = await provisionBackfill(p, 'acme', ['d1']);
    const buckets = async (apiUrl: string) => {
      const details = (await apiCall(apiUrl, token, '/sensors/details', {
        deviceName: 'd1',
        sensorName: 'Temperature',
      })) as { last24Hours: Bucket[] };
      return new Map(details.last24Hours.map((b) => [b.sUTC * 1000, [b.count, b.total]]));
    };

    const now = Date.now();
    const hour = Math.floor(now / H) * H;
    await upload(p, key, 'd1', [{ t: now - 1000, p: { Temperature: 21 } }]);
    await processed(p);
    // Both API processes read the closed hours (none) and keep them.
    for (const api of apis) expect((await buckets(api)).get(hour - H)).toBeUndefined();

    // Measured an hour and five hours ago, uploaded now: older than the current value.
    await upload(p, key, 'd1', [
      { t: hour - 5 * H + 60_000, p: { Temperature: 18 } },
      { t: hour - H + 60_000, p: { Temperature: 19 } },
      { t: hour - H + 120_000, p: { Temperature: 20 } },
    ]);
    await processed(p);
    for (const api of apis) {
      const shown = await buckets(api);
      expect(shown.get(hour - 5 * H)).toEqual([1, 18]);
      expect(shown.get(hour - H)).toEqual([2, 39]);
    }
  });
});
