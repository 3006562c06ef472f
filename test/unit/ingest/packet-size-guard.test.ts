import { describe, expect, it } from 'vitest';
import mqttPacket from 'mqtt-packet';
import { createPacketSizeScanner } from '../../../src/mqtt/packet-size-guard.ts';

const publish = (payloadBytes: number) =>
  mqttPacket.generate({
    cmd: 'publish',
    topic: 'raw/vk_k',
    payload: Buffer.alloc(payloadBytes, 0x61),
    qos: 1,
    messageId: 7,
    retain: false,
    dup: false,
  });

describe('MQTT packet size scanner', () => {
  it('passes a stream of packets under the limit, however it is chunked', () => {
    const stream = Buffer.concat([publish(10), publish(300), publish(0), publish(20_000)]);
    for (const chunkSize of [1, 2, 3, 7, 64, 100_000]) {
      const scan = createPacketSizeScanner(21_000);
      for (let i = 0; i < stream.length; i += chunkSize) {
        expect(scan(stream.subarray(i, i + chunkSize))).toBe(true);
      }
    }
  });

  it('refuses as soon as a packet header announces more than the limit', () => {
    const scan = createPacketSizeScanner(1000);
    expect(scan(publish(100))).toBe(true);
    const big = publish(5000);
    expect(scan(big.subarray(0, 4))).toBe(false);
  });

  it('refuses a remaining length longer than four bytes', () => {
    const scan = createPacketSizeScanner(Number.MAX_SAFE_INTEGER);
    expect(scan(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]))).toBe(false);
  });
});
