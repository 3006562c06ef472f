import { describe, expect, it } from 'vitest';
import { greenhouse, greenhouseUplink, step } from '../../../scripts/lib/simulator.ts';

type Room = Parameters<typeof step>[0];
const room = (deviceName: string): Room => ({
  deviceName,
  temperature: 21,
  humidity: 45,
  lux: 300,
  batteryMv: 3150,
  co2: 480,
  occupancy: 5,
  targetOccupancy: 5,
});

describe('demo simulator', () => {
  it('produces values inside each data type and crosses the demo thresholds now and then', () => {
    const office = room('device_2_rd_office');
    const hallway = room('device_1_hallway');
    const readings = Array.from({ length: 200 }, (_, tick) => [
      step(office, tick),
      step(hallway, tick),
    ]).flat();
    for (const r of readings) {
      expect(r.Humidity as number).toBeGreaterThanOrEqual(0);
      expect(r.Humidity as number).toBeLessThanOrEqual(100);
      expect(r.CO2 as number).toBeGreaterThanOrEqual(400);
      expect(Number.isInteger(r.Occupancy)).toBe(true);
    }
    const officeCo2 = readings
      .filter((r) => r.deviceName === 'device_2_rd_office')
      .map((r) => r.CO2 as number);
    expect(Math.max(...officeCo2)).toBeGreaterThan(1200);
    expect(Math.min(...officeCo2.slice(50))).toBeLessThan(800);
    const hallwayTemps = readings
      .filter((r) => r.deviceName === 'device_1_hallway')
      .map((r) => r.Temperature as number);
    expect(Math.max(...hallwayTemps)).toBeGreaterThan(25);
  });
});

describe('demo LoRaWAN node', () => {
  it('sends The Things Stack uplinks whose bytes the demo codec decodes, the soil watered and the signal fading now and then', async () => {
    const { readNetworkMessage } = await import('../../../src/domain/network-messages.ts');
    const node = greenhouse();
    const uplinks = Array.from({ length: 200 }, (_, tick) =>
      readNetworkMessage('tts', undefined, greenhouseUplink(node, tick)),
    );
    const frames = uplinks.map((u) => {
      if (!('kind' in u) || u.kind !== 'uplink') throw new Error('not an uplink');
      return { bytes: Buffer.from(u.bytesHex ?? '', 'hex'), radio: u.radio, devEui: u.devEui };
    });
    expect(frames.every((f) => f.bytes.length === 7 && f.radio.fPort === 1)).toBe(true);
    expect(frames[0]?.devEui).toBe('70b3d57ed005a1b2');
    expect(frames.map((f) => f.radio.frameCounter)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    const moisture = frames.map((f) => f.bytes[3]!);
    expect(Math.min(...moisture)).toBeLessThan(25);
    expect(frames.some((f) => (f.bytes[6]! & 1) === 1)).toBe(true);
    expect(Math.min(...frames.map((f) => f.radio.rssi!))).toBeLessThan(-115);
    expect(Math.max(...frames.map((f) => f.radio.rssi!))).toBeGreaterThan(-100);
  });
});
