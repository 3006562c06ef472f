import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packItems, unpackItems } from '../../../src/queue/item-codec.ts';
import { GATEWAY_KINDS, type IngestItem } from '../../../src/domain/ingest-item.ts';
import { NETWORK_SERVERS } from '../../../src/domain/network-messages.ts';

const item = (over: Partial<IngestItem> = {}): IngestItem => ({
  id: '0mwu47gljvZnrwYaZ',
  env: 'acme',
  gateway: 'submit',
  via: 'http',
  receivedMs: 1_795_489_696_791,
  body: '{"deviceName":"d1","t":21.5}',
  bodyIsHex: false,
  client: '127.0.0.1',
  ...over,
});

describe('queue item codec', () => {
  // CPU-bound (a hundred random batches): a loaded machine needs more than the default 5 s.
  it('reads back exactly the items it wrote, whatever their free text holds', { timeout: 30_000 }, () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const arbitraryItem = fc.record({
      id: fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/),
      env: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/),
      gateway: fc.constantFrom(...GATEWAY_KINDS, ...NETWORK_SERVERS),
      via: fc.constantFrom('http' as const, 'mqtt' as const),
      receivedMs: fc.integer({ min: 0, max: 2 ** 45 }),
      body: text,
      bodyIsHex: fc.boolean(),
      client: text,
      deviceName: fc.option(text, { nil: undefined }),
      nameInBody: fc.option(text, { nil: undefined }),
      event: fc.option(text, { nil: undefined }),
      keyId: fc.option(text, { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(arbitraryItem, { maxLength: 8 }), (items) => {
        const written = items.map((it) => {
          const { deviceName, nameInBody, event, keyId, ...rest } = it;
          // Only a network server's message carries its event and key id.
          const network = rest.gateway === 'tts' || rest.gateway === 'chirpstack';
          return {
            ...rest,
            ...(deviceName === undefined ? {} : { deviceName }),
            ...(nameInBody === undefined ? {} : { nameInBody }),
            ...(event === undefined || !network ? {} : { event }),
            ...(keyId === undefined || !network ? {} : { keyId }),
          };
        });
        expect(unpackItems(packItems(written))).toEqual(written);
      }),
    );
  });

  it('keeps tabs, colons, newlines, digits and dashes in free text apart from the framing', () => {
    const items = [
      item({ body: '12:\t-\n3:abc', client: '-', deviceName: '5:x\ty', nameInBody: '' }),
      item({ body: '', via: 'mqtt', bodyIsHex: true }),
    ];
    expect(unpackItems(packItems(items))).toEqual(items);
  });

  it('reads an entry of items queued before network servers’ fields existed', () => {
    // What an earlier version wrote: no item of its had a network server's gateway.
    const earlier = '0mwu47gljvZnrwYaZ\tacme\tsubmit\thttp\t1795489696791\t0\t-2:d19:127.0.0.12:{}';
    expect(unpackItems(earlier)).toEqual([
      {
        id: '0mwu47gljvZnrwYaZ',
        env: 'acme',
        gateway: 'submit',
        via: 'http',
        receivedMs: 1795489696791,
        bodyIsHex: false,
        body: '{}',
        client: '127.0.0.1',
        nameInBody: 'd1',
      },
    ]);
  });

  it('is a little over half the size of the JSON it replaces', () => {
    const items = Array.from({ length: 200 }, (_, i) => item({ nameInBody: `dev-${i}` }));
    expect(packItems(items).length / JSON.stringify(items).length).toBeLessThan(0.65);
  });

  it('refuses a truncated text instead of inventing items', () => {
    const packed = packItems([item()]);
    expect(() => unpackItems(packed.slice(0, -5))).toThrow(/malformed queue entry/);
    expect(() => unpackItems(packed.slice(0, 20))).toThrow(/malformed queue entry/);
  });
});
