import { describe, expect, it } from 'vitest';
import { routingKey } from '../../../src/queue/ingest-producer.ts';
import { ROUTING_KEY, type GatewayKind, type IngestItem } from '../../../src/domain/ingest-item.ts';

const item = (gateway: GatewayKind, body: string, extra: Partial<IngestItem> = {}): IngestItem => ({
  id: 'i',
  env: 'e',
  gateway,
  via: 'mqtt',
  receivedMs: 0,
  body,
  bodyIsHex: false,
  client: 'c1',
  ...extra,
});

describe('routingKey', () => {
  it.each([
    ['submit with deviceName in the body', item('submit', '{"deviceName":"d1","T":1}'), 'e\nd1'],
    ['submit with an empty deviceName', item('submit', '{"deviceName":""}'), 'e\n'],
    ['submit without deviceName', item('submit', '{"T":1}'), 'e\nclient:c1'],
    ['submit with a JSON array', item('submit', '[1]'), 'e\nclient:c1'],
    ['submit with JSON null', item('submit', 'null'), 'e\nclient:c1'],
    [
      'a pre-parser gateway, deviceName in the body',
      item('preparserfirst', '{"deviceName":"d1"}'),
      'e\nclient:c1',
    ],
    ['raw with a device in the path', item('raw', '"x"', { deviceName: 'd2' }), 'e\nd2'],
  ])('routes %s the same whether the gateway parsed the body or not', (_, i, expected) => {
    expect(routingKey(i)).toBe(expected);
    expect(routingKey(i, { value: JSON.parse(i.body) as unknown })).toBe(expected);
  });

  it('routes a body that is not JSON by its sender', () => {
    expect(routingKey(item('submit', '{oops'))).toBe('e\nclient:c1');
    expect(routingKey(item('submit', 'ff', { bodyIsHex: true }))).toBe('e\nclient:c1');
  });

  it('takes the key the gateway stored, which is never written to the queue', () => {
    const i = item('submit', '{"deviceName":"d1"}');
    i[ROUTING_KEY] = 'e\nd1';
    expect(routingKey({ ...i, body: '{}' })).toBe('e\nd1');
    expect(JSON.parse(JSON.stringify(i))).toEqual(item('submit', '{"deviceName":"d1"}'));
  });
});
