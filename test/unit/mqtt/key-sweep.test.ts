import { describe, expect, it } from 'vitest';
import type { Client } from 'aedes';
import { createKeySweep } from '../../../src/mqtt/key-sweep.ts';

describe('key sweep', () => {
  it('keeps sweeping after a pass that had nothing to check', async () => {
    const valid = new Set(['k1']);
    const sweep = createKeySweep({ intervalMs: 60_000, isValid: (k) => Promise.resolve(valid.has(k)) });
    await sweep.sweep(); // nothing tracked: finishes without awaiting anything
    let closed = false;
    const client = { closed: false, close: () => (closed = true) } as unknown as Client;
    sweep.track(client, 'k1');
    await sweep.sweep();
    expect(closed).toBe(false);
    valid.delete('k1');
    await sweep.sweep();
    expect(closed).toBe(true);
    sweep.close();
  });
});
