/**
 * Upgrades of a whole Vigil. State written before the layout version was stored (layout 1: no
 * alarm index, data points in point layout 1) is upgraded at start to the latest layout and read as
 * it was: no status changes, no new event, no notification, the alarm index built from the stored
 * statuses, and every data point in point layout 2. A Redis holding a layout newer than this
 * version knows is refused, by the service and by the `vigil` command, and left as it is.
 *
 * The first phase writes state through today's code and then stores each data point as point
 * layout 1 (the frozen encoder, point-record-v1.ts): what deployments of layout 1 hold.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAlarmIndex } from '../../src/state/alarm-index.ts';
import { DATA_LAYOUT } from '../../src/migrations.ts';
import { decodePoint } from '../../src/state/point-record.ts';
import { encodePointV1 } from '../../src/state/point-record-v1.ts';
import { createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { countEntries } from '../../src/queue/ingest-queue.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { testConfig } from '../support/context.ts';
import { storedState } from '../support/state.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { loseContact } from '../support/contact.ts';
import { createCliHarness } from './cli-run.ts';

const quiet = createLogger('silent');
/** A layout one past what this version knows. */
const NEWER = String(DATA_LAYOUT + 1);

/** Rewrites the device's data points in point layout 1, as an install of data layout 1 holds them. */
async function storeAsPointLayout1(p: Pipeline, device: string): Promise<void> {
  const key = p.keys.deviceState('acme', device);
  for (const [field, raw] of Object.entries(await p.redis.hgetallBuffer(key))) {
    if (!field.endsWith('|p')) continue;
    const point = decodePoint(raw)!;
    await p.redis.hset(key, field, encodePointV1(point));
  }
}

const idle = (p: Pipeline) => async () =>
  (await countEntries(p.redis, p.keys, p.config.queuePartitions)) === 0 ? true : undefined;

/** Each data point's status, and the device's open Availability event. */
async function statuses(p: Pipeline, device: string) {
  const s = await storedState(p.redis, p.keys.deviceState('acme', device));
  const out: Record<string, string | undefined> = { lost: s.device['@lost'] };
  for (const [sensor, point] of Object.entries(s.points)) out[sensor] = point.status;
  return out;
}

describe('upgrading', () => {
  it(
    'keeps every status, creates no event and builds the alarm index when an install without a stored layout starts',
    { timeout: 60_000 },
    async () => {
      // The state of an install from before the layout version was stored, written by the same
      // code path: data points in WARNING, CRITICAL and ERROR, and a device whose contact is lost.
      const p = await startPipeline({ roles: 'gateway,worker' });
      const { key } = await provisionComfort(p, 'acme', ['warm']);
      await p.admin.createDevice('acme', {
        name: 'silent',
        definitionName: 'ComfortSensors',
        definitionIsPublic: false,
        availabilityMinutes: 1,
      });
      const post = async (body: Record<string, unknown>) =>
        expect((await p.post('gateway/submit', key, JSON.stringify(body))).status).toBe(202);
      await post({ deviceName: 'warm', Temperature: 31, Humidity: 75, Battery: 2700, CO2: 500 });
      await post({ deviceName: 'silent', Temperature: 18 });
      await eventually(idle(p), { timeoutMs: 15_000, message: 'the first payloads processed' });
      await loseContact(p, 'acme', 'silent');
      await p.vigil.close();
      // Layout 1 had no alarm index.
      await p.redis.del(p.keys.stateLayout(), p.keys.alarmIndex('acme'), p.keys.alarmRecords('acme'));
      const outboxLength = await p.redis.xlen(p.keys.eventOutbox());
      const before = { warm: await statuses(p, 'warm'), silent: await statuses(p, 'silent') };
      expect(before).toEqual({
        warm: {
          lost: undefined,
          Temperature: 'CRITICAL',
          Humidity: 'WARNING',
          Battery: 'ERROR',
          CO2: 'SUCCESS',
        },
        silent: { lost: '1', Temperature: 'SUCCESS' },
      });
      const events = await p.redis.zrange(p.keys.envEvents('acme'), 0, -1);
      expect(events).toHaveLength(4);
      // Its data points were in point layout 1.
      for (const device of ['warm', 'silent']) await storeAsPointLayout1(p, device);

      const upgraded = await startVigil(p.config, quiet);
      try {
        expect(await p.redis.get(p.keys.stateLayout())).toBe(String(DATA_LAYOUT));
        const warm = await storedState(p.redis, p.keys.deviceState('acme', 'warm'));
        // Point layout 2, received at the device's last contact, nothing waiting.
        expect(warm.points.Temperature).toMatchObject({
          status: 'CRITICAL',
          receivedMs: Number(warm.device['@lc']),
          held: [],
          shownValue: '',
        });
        const alarms = await createAlarmIndex(p.redis, p.keys).list('acme', 100);
        expect(alarms.map((a) => [a.device, a.sensor, a.category, a.status, a.acknowledgement])).toEqual([
          ['warm', 'Temperature', 'Sensors', 'CRITICAL', null],
          ['warm', 'Battery', 'Sensors', 'ERROR', null],
          ['silent', null, 'Availability', 'ERROR', null],
          ['warm', 'Humidity', 'Sensors', 'WARNING', null],
        ]);
        expect(await p.redis.xlen(p.keys.eventOutbox())).toBe(outboxLength);
        const again = async (body: Record<string, unknown>) => {
          const res = await fetch(`http://127.0.0.1:${upgraded.ports.gateway}/gateway/submit/${key}`, {
            method: 'POST',
            body: JSON.stringify(body),
          });
          expect(res.status).toBe(202);
        };
        // Values that keep every status.
        await again({ deviceName: 'warm', Temperature: 30.8, Humidity: 71, Battery: 2750, CO2: 600 });
        await eventually(idle(p), { timeoutMs: 15_000, message: 'the payload after the upgrade processed' });
        expect(await p.redis.hget(p.keys.deviceState('acme', 'warm'), 'CO2|v')).toBe('600');
        expect({ warm: await statuses(p, 'warm'), silent: await statuses(p, 'silent') }).toEqual(before);
        expect(await p.redis.zrange(p.keys.envEvents('acme'), 0, -1)).toEqual(events);
      } finally {
        await upgraded.close();
      }
    },
  );

  it('refuses to start on a layout newer than it knows, leaving the data as it is', async () => {
    const config = testConfig({ roles: 'worker,api' });
    const redis = connectRedis(config.redisUrl, 'command');
    onTestFinished(() => closeRedis(redis));
    const keys = createKeys(config.keyPrefix);
    await redis.set(keys.stateLayout(), NEWER);
    const refused = startVigil(config, quiet);
    await expect(refused).rejects.toMatchObject({ code: 'STATE_LAYOUT_UNKNOWN' });
    expect(await redis.keys(`${config.keyPrefix}:*`)).toEqual([keys.stateLayout()]);
    expect(await redis.get(keys.stateLayout())).toBe(NEWER);

    // As a process: one line on stderr naming both layouts, exit code 1.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_')));
    const run = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        'node_modules/.bin/node',
        ['--no-node-snapshot', 'src/main.ts'],
        {
          env: {
            ...env,
            VIGIL_CONFIG_FILE: '', // not the checkout's config/vigil.env
            VIGIL_REDIS_URL: config.redisUrl,
            VIGIL_INFLUX_URL: config.influxUrl,
            VIGIL_KEY_PREFIX: config.keyPrefix,
            VIGIL_ROLES: 'worker',
            VIGIL_OPS_PORT: '0',
          },
          timeout: 30_000,
        },
        (err, _stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
      );
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `^vigil: Redis holds Vigil data in layout ${NEWER}, newer than .*\\(up to ${DATA_LAYOUT}\\)[^\\n]*\\n$`,
      ),
    );
  });

  it('the vigil command refuses to run on a layout newer than it knows', async () => {
    const cli = createCliHarness();
    try {
      const layoutKey = createKeys(cli.prefix).stateLayout();
      await cli.redis.set(layoutKey, NEWER);
      const r = await cli.run(['env', 'create', 'acme']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^vigil: Redis holds Vigil data in layout ${NEWER}, newer than .*\\(up to ${DATA_LAYOUT}\\)`,
        ),
      );
      expect(await cli.redis.keys(`${cli.prefix}:*`)).toEqual([layoutKey]);
    } finally {
      await cli.close();
    }
  });
});
