import { describe, expect, it, onTestFinished } from 'vitest';
import { createServer } from 'node:net';
import { startVigil } from '../../src/main.ts';
import { createLogger } from '../../src/log/logger.ts';
import { PortInUseError } from '../../src/lib/listen.ts';
import { testConfig } from '../support/context.ts';
import { listenersOf } from '../support/listeners.ts';

const log = createLogger('silent');

describe('health and readiness', () => {
  it('answers /healthz and /readyz with Redis and InfluxDB checked', async () => {
    const vigil = await startVigil(testConfig({ roles: 'api' }), log);
    onTestFinished(() => vigil.close());
    const base = `http://127.0.0.1:${vigil.ports.api}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      data: { ready: true, checks: { redis: true, influxdb: true } },
    });
    // Metrics are on the ops port; the API port serves them only behind VIGIL_METRICS_TOKEN.
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    const metrics = await fetch(`http://127.0.0.1:${vigil.ports.ops}/metrics`);
    expect(await metrics.text()).toContain('vigil_process_cpu');
  });

  it('serves /metrics on the API port behind VIGIL_METRICS_TOKEN, and asks for it on the ops port too', async () => {
    const vigil = await startVigil(testConfig({ roles: 'api', metricsToken: 'm3trics-t0ken' }), log);
    onTestFinished(() => vigil.close());
    for (const port of [vigil.ports.api, vigil.ports.ops]) {
      const url = `http://127.0.0.1:${port}/metrics`;
      const refused = await fetch(url);
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([
        401,
        'UNAUTHORIZED',
      ]);
      expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const ok = await fetch(url, { headers: { authorization: 'Bearer m3trics-t0ken' } });
      expect(await ok.text()).toContain('vigil_process_cpu');
    }
  });

  it('is not ready when InfluxDB does not answer', async () => {
    const vigil = await startVigil(testConfig({ roles: 'api', influxUrl: 'http://127.0.0.1:9' }), log);
    onTestFinished(() => vigil.close());
    const ready = await fetch(`http://127.0.0.1:${vigil.ports.api}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      data: { ready: false, checks: { redis: true, influxdb: false } },
    });
  });

  it('serves the ops endpoints on the ops port when the api role is off', async () => {
    const vigil = await startVigil(testConfig({ roles: 'worker' }), log);
    onTestFinished(() => vigil.close());
    expect(vigil.ports.api).toBe(0);
    expect((await fetch(`http://127.0.0.1:${vigil.ports.ops}/healthz`)).status).toBe(200);
  });

  it('listens on 127.0.0.1 for the ops port by default, wherever VIGIL_HOST puts the other ports', async () => {
    const vigil = await startVigil(testConfig({ roles: 'gateway', host: '127.0.0.2' }), log);
    onTestFinished(() => vigil.close());
    const mine = listenersOf([process.pid]);
    const addressOf = (port: number) => mine.filter((l) => l.port === port).map((l) => l.address);
    expect({ ops: addressOf(vigil.ports.ops), gateway: addressOf(vigil.ports.gateway) }).toEqual({
      ops: ['127.0.0.1'],
      gateway: ['127.0.0.2'],
    });
  });

  it('listens where VIGIL_OPS_HOST says', async () => {
    const vigil = await startVigil(testConfig({ roles: 'gateway', opsHost: '127.0.0.3' }), log);
    onTestFinished(() => vigil.close());
    const ops = listenersOf([process.pid]).filter((l) => l.port === vigil.ports.ops);
    expect(ops.map((l) => l.address)).toEqual(['127.0.0.3']);
    expect((await fetch(`http://127.0.0.3:${vigil.ports.ops}/healthz`)).status).toBe(200);
  });

  it('fails with a clear message when its port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    onTestFinished(() => new Promise<void>((r) => blocker.close(() => r())));
    const port = (blocker.address() as { port: number }).port;
    await expect(startVigil(testConfig({ roles: 'api', apiPort: port }), log)).rejects.toThrow(
      PortInUseError,
    );
  });
});
