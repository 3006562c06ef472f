/**
 * The notifier's delivery log (`vigil notify log`): attempts gathered and written a moment later,
 * each environment's newest first and capped at VIGIL_NOTIFY_LOG_SIZE.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createGatheringDeliveryLog, type DeliveryAttempt } from '../../src/alerting/delivery-log.ts';
import { createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

function attempt(notificationId: string): DeliveryAttempt {
  return {
    timeUTC: '2026-11-02T10:00:00.000Z',
    notificationId,
    channel: 'ops',
    channelType: 'webhook',
    kind: 'event',
    deviceName: 'd1',
    sensorName: 'Temperature',
    attempt: 1,
    outcome: 'delivered',
    status: 200,
    answer: 'ok',
    ms: 12,
  };
}

function setUp(gatherMs: number) {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command', 'delivery-log-test');
  onTestFinished(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  const log = createGatheringDeliveryLog({ redis, keys, size: 3, gatherMs, log: createLogger('silent') });
  onTestFinished(() => log.flush());
  const ids = async (env: string) => (await log.list(env, 10)).map((a) => a.notificationId);
  return { redis, keys, log, ids };
}

describe('delivery log', () => {
  it("writes the attempts it gathered with each environment's newest first, the newest `size`", async () => {
    // No timer write within the test: it writes with flush().
    const { redis, keys, log, ids } = setUp(3_600_000);
    for (const id of ['n1', 'n2', 'n3', 'n4']) await log.record('acme', attempt(id));
    await log.record('other', attempt('o1'));
    expect(await redis.exists(keys.notifyLog('acme'), keys.notifyLog('other'))).toBe(0);
    await log.flush();
    expect(await ids('acme')).toEqual(['n4', 'n3', 'n2']);
    expect(await ids('other')).toEqual(['o1']);
    expect((await log.list('acme', 1))[0]).toEqual(attempt('n4'));
  });

  it('writes an attempt within `gatherMs`, without a flush', async () => {
    const { log, ids } = setUp(20);
    await log.record('acme', attempt('n1'));
    await eventually(() => ids('acme'), { until: (l) => l.length === 1, message: 'the attempt in the log' });
  });
});
