/**
 * Stale rules: a data point that has had no value for `after` while its device still sends payloads
 * gets the rule's status, once, and its next value decides again; a device whose contact is lost
 * raises its Availability event and nothing stale. Stale counts in receive time, so these tests run
 * on the real clock with durations of a second.
 */
import { describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { PASS_THROUGH_PARSER } from '../fixtures/definitions/temperature.ts';
import { processed } from '../support/backfill.ts';
import { eventually } from '../support/eventually.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';
import { storedState } from '../support/state.ts';

const AIR: DefinitionSpec = {
  name: 'Air',
  manufacturer: 'Acme',
  version: '1',
  dataPoints: [
    {
      name: 'CO2',
      displayName: 'CO2',
      dataType: 'co2',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 1000 }],
      stale: { afterMs: 1000, status: 'WARNING' },
    },
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [],
    },
  ],
};
const STALE_612 = 'CO2 - No value for 1 s - WARNING - 612 ppm';

async function setup(availabilityMinutes?: number) {
  const p = await startPipeline({
    roles: 'gateway,worker,scheduler',
    timerCheckMs: 50,
    availabilityCheckMs: 50,
  });
  await p.admin.createEnvironment('acme', 'en');
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, AIR, PASS_THROUGH_PARSER);
  await p.admin.createDevice('acme', {
    name: 'a1',
    definitionName: 'Air',
    definitionIsPublic: false,
    ...(availabilityMinutes ? { availabilityMinutes } : {}),
  });
  const { key } = await p.admin.createApiKey('acme', 'test');
  const send = async (values: Record<string, number>) => {
    const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'a1', ...values }));
    expect(res.status).toBe(202);
  };
  return { p, send };
}

const messages = async (p: Pipeline) =>
  (await p.redis.zrange(p.keys.envEvents('acme'), 0, -1)).map(
    (j) => (JSON.parse(j) as { eventMessage: string }).eventMessage,
  );

describe('stale rules', () => {
  it('marks a data point stale once while its device keeps sending, and its next value clears it', async () => {
    const { p, send } = await setup();
    await send({ CO2: 612, Temperature: 20 });
    await processed(p);
    // The device keeps sending, without CO2.
    await eventually(
      async () => {
        await send({ Temperature: 21 });
        return (await messages(p)).includes(STALE_612);
      },
      { intervalMs: 150, message: `the event "${STALE_612}"` },
    );
    const { points } = await storedState(p.redis, p.keys.deviceState('acme', 'a1'));
    expect(points.CO2).toMatchObject({ status: 'WARNING', rule: -2, value: '612' });
    // More payloads without CO2: still one stale event.
    for (let i = 0; i < 5; i++) await send({ Temperature: 22 });
    await processed(p);
    expect((await messages(p)).filter((m) => m === STALE_612)).toHaveLength(1);

    await send({ CO2: 700 });
    await eventually(async () =>
      (await messages(p)).includes('CO2 - Returned to success status - SUCCESS - 700 ppm'),
    );
    expect(await messages(p)).toHaveLength(2);
  });

  it('marks nothing stale while the device is silent, and a data point still missing once it is back', async () => {
    // CO2 would be stale after 1 s; contact is lost after 3 s of silence.
    const { p, send } = await setup(0.05);
    await send({ CO2: 612, Temperature: 20 });
    await eventually(async () =>
      (await messages(p)).some((m) => m.startsWith('availability - No contact for')),
    );
    // Past the stale deadline, its tick applied: it waits for contact instead.
    await eventually(async () => (await p.redis.hget(p.keys.deviceState('acme', 'a1'), '@sw')) === '1', {
      message: 'the stale rule to wait for contact',
    });
    await processed(p);
    expect((await messages(p)).filter((m) => m.startsWith('CO2'))).toEqual([]);

    // Back, without CO2: contact restored, and CO2 has been missing all along.
    await send({ Temperature: 21 });
    await eventually(async () => (await messages(p)).includes(STALE_612));
    const all = await messages(p);
    expect(all.filter((m) => m.startsWith('availability - Contact restored'))).toHaveLength(1);
    expect(all.filter((m) => m.startsWith('CO2'))).toEqual([STALE_612]);
  });
});
