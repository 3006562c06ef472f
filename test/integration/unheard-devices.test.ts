/**
 * The devices of an environment never heard from (StateKeys.unheardDevices), kept as they change:
 * a device created or imported joins the set, its first processed payload takes it out, its
 * deletion too, and one created again after a deletion is new again. Layout 6 builds the set from
 * the state devices hold, and a second run changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { keepUnheardDevices } from '../../src/state/unheard.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';

const comfort = (name: string) => ({ name, definitionName: 'ComfortSensors', definitionIsPublic: false });

describe('devices never heard from', () => {
  it('are kept as devices are created, imported, heard from and deleted, and built by layout 6', async () => {
    const p = await startPipeline();
    const { key } = await provisionComfort(p, 'acme', ['a', 'b']);
    const unheard = () => p.redis.zrange(p.keys.unheardDevices('acme'), 0, -1);
    expect(await unheard()).toEqual(['a', 'b']);

    const send = async (deviceName: string) => {
      const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName, Temperature: 21 }));
      expect(res.status).toBe(202);
    };
    await send('a');
    await eventually(async () => (await unheard()).join() === 'b', { message: 'a heard from' });

    // An import adds its new devices; a device it changes that was heard from stays out.
    const a = await p.admin.requireDevice('acme', 'a');
    await p.admin.importDevices(
      'acme',
      [
        { input: comfort('c'), current: null },
        { input: comfort('d'), current: null },
        { input: { ...comfort('a'), displayName: 'A again' }, current: a },
      ],
      () => new Set(),
    );
    expect(await unheard()).toEqual(['b', 'c', 'd']);
    // Creating a device that exists (refused) adds nothing either.
    await expect(p.admin.createDevice('acme', comfort('a'))).rejects.toMatchObject({
      code: 'ALREADY_EXISTS',
    });
    expect(await unheard()).toEqual(['b', 'c', 'd']);

    await p.admin.deleteDevice('acme', 'b');
    expect(await unheard()).toEqual(['c', 'd']);
    // Deleted with its state, a device created again has not been heard from.
    await p.admin.deleteDevice('acme', 'a');
    await p.admin.createDevice('acme', comfort('a'));
    expect(await unheard()).toEqual(['a', 'c', 'd']);

    await send('c');
    await eventually(async () => (await unheard()).join() === 'a,d', { message: 'c heard from' });
    const ctx = {
      redis: p.redis,
      keys: p.keys,
      log: createLogger('silent'),
      signal: new AbortController().signal,
    };
    await p.redis.del(p.keys.unheardDevices('acme'));
    await keepUnheardDevices.run(ctx);
    await keepUnheardDevices.run(ctx);
    expect(await unheard()).toEqual(['a', 'd']);
  });
});
