/**
 * QoS 1 publishes while the broker keeps refusing some (Redis paused again and again, so the
 * enqueue times out and the broker closes the connection without a PUBACK): each publish is either
 * acknowledged once it is durable, or its client is told to send it again. mqtt.js resends what it
 * had sent on its next connection, and fails ("Connection closed") the publishes it queued while
 * replaying them when that connection closes too — a device must publish those again, as this
 * client does. Then every number is acknowledged, and every acknowledged number is in the queue.
 */
import mqtt from 'mqtt';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createIngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker } from '../../src/mqtt/broker.ts';
import { createIngestHarness } from './ingest-harness.ts';

describe('MQTT QoS 1 under repeated broker refusals', () => {
  it('acknowledges every publish once durable, or makes its client send it again', { timeout: 180_000 }, async () => {
    const h = createIngestHarness({ ingestWriteTimeoutMs: 100, credentialCacheMs: 60_000 });
    onTestFinished(() => h.close());
    const ingest = createIngestService(h);
    onTestFinished(() => ingest.close());
    const broker = await startMqttBroker({ ...h, ingest });
    onTestFinished(() => broker.close());
    const key = await h.createApiKey('acme');
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
      clientId: `refusals-${Date.now()}`,
      clean: false,
      reconnectPeriod: 100,
      username: 'device',
      password: key,
    });
    client.on('error', () => undefined);
    onTestFinished(() => client.endAsync(true));
    // Redis stops taking writes for 300 ms every 400 ms: publishes in those windows are refused.
    let sending = true;
    let refusalWindows = 0;
    const pauses = (async () => {
      while (sending) {
        await new Promise((resolve) => setTimeout(resolve, 400));
        await h.redis.call('CLIENT', 'PAUSE', 300, 'WRITE');
        refusalWindows += 1;
      }
    })();
    // At least 3,000 publishes, and on for at least 15 refusal windows (~6 s).
    const MIN_COUNT = 3000;
    const MIN_WINDOWS = 15;
    let next = 0;
    let resent = 0;
    const acknowledged = new Set<number>();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < MIN_COUNT || refusalWindows < MIN_WINDOWS) {
          const n = next++;
          // A publish mqtt.js fails was never sent: send it again, as a device should.
          for (;;) {
            const ok = await client.publishAsync(`raw/${key}/dev`, String(n), { qos: 1 }).then(
              () => true,
              () => false,
            );
            if (ok) break;
            resent += 1;
          }
          acknowledged.add(n);
        }
      }),
    );
    sending = false;
    await pauses;
    const count = next;
    const queued = new Set((await h.queuedItems()).map((i) => Number(i.body)));
    console.info(
      `QoS 1 under refusals: ${count} published, ${acknowledged.size} acknowledged, ${resent} sent again after the client failed them, ${refusalWindows} refusal windows`,
    );
    expect(acknowledged.size).toBe(count);
    expect([...acknowledged].filter((n) => !queued.has(n))).toEqual([]);
  });
});
