import { describe, expect, it } from 'vitest';
import {
  handWrittenFrame,
  networkDataOf,
  readChirpstackEvent,
  readTtsMessage,
} from '../../../src/domain/network-messages.ts';
import {
  chirpstackJoin,
  chirpstackLog,
  chirpstackStatus,
  chirpstackUp,
  ttsJoinAccept,
  ttsUplink,
} from '../../../scripts/lib/network-messages.ts';

const FRAME = {
  deviceId: 'node-1',
  devEui: '0004A30B001C0530',
  bytes: [0x08, 0x69, 0x61, 0x57],
  fPort: 2,
  fCnt: 41,
  receivedAt: '2026-12-02T06:00:00.123456789Z',
  gateways: [
    { rssi: -97, snr: -2.5 },
    { rssi: -71, snr: 8.75 },
  ],
  spreadingFactor: 9,
};

describe('The Things Stack messages', () => {
  it('reads an uplink: device, DevEUI in lowercase, bytes as hex, receive time, best radio values', () => {
    expect(readTtsMessage(ttsUplink(FRAME))).toEqual({
      kind: 'uplink',
      deviceId: 'node-1',
      devEui: '0004a30b001c0530',
      bytesHex: '08696157',
      recvTimeMs: Date.parse('2026-12-02T06:00:00.123Z'),
      recvTime: '2026-12-02T06:00:00.123456789Z',
      radio: { frameCounter: 41, fPort: 2, gatewayCount: 2, rssi: -71, snr: 8.75, spreadingFactor: 9 },
    });
  });

  it('reads a frame counter and port left out (zero) as 0', () => {
    const read = readTtsMessage(ttsUplink({ ...FRAME, fCnt: 0, fPort: 0 }));
    expect(read).toMatchObject({ kind: 'uplink', radio: { frameCounter: 0, fPort: 0 } });
  });

  it('takes the last battery percentage TTS forwards', () => {
    const message = ttsUplink(FRAME);
    (message.uplink_message as Record<string, unknown>).last_battery_percentage = { f_cnt: 40, value: 87.5 };
    expect(readTtsMessage(message)).toMatchObject({ radio: { battery: 87.5 } });
  });

  it('names the type of the messages that are not uplinks', () => {
    expect(readTtsMessage(ttsJoinAccept('node-1', '0004A30B001C0530'))).toEqual({
      kind: 'ignored',
      type: 'join_accept',
      deviceId: 'node-1',
      devEui: '0004a30b001c0530',
    });
    const ack = { ...ttsJoinAccept('node-1', '0004A30B001C0530'), join_accept: undefined, downlink_ack: {} };
    expect(readTtsMessage(ack)).toMatchObject({ kind: 'ignored', type: 'downlink_ack' });
  });

  it('says what is wrong with a body that is not a message', () => {
    expect(readTtsMessage([])).toHaveProperty('problem');
    expect(readTtsMessage({ uplink_message: {} })).toHaveProperty('problem');
    expect(readTtsMessage(ttsUplink({ ...FRAME, receivedAt: 'soon' }))).toHaveProperty('problem');
    const badPayload = ttsUplink(FRAME);
    (badPayload.uplink_message as Record<string, unknown>).frm_payload = 'not base64!';
    expect(readTtsMessage(badPayload)).toHaveProperty('problem');
    const badEui = ttsUplink({ ...FRAME, devEui: '0004A30B' });
    expect(readTtsMessage(badEui)).toHaveProperty('problem');
    const badCounter = ttsUplink(FRAME);
    (badCounter.uplink_message as Record<string, unknown>).f_cnt = -1;
    expect(readTtsMessage(badCounter)).toHaveProperty('problem');
  });
});

describe('ChirpStack events', () => {
  it('reads an up event like a TTS uplink', () => {
    expect(
      readChirpstackEvent(
        'up',
        chirpstackUp({ ...FRAME, receivedAt: '2026-12-02T06:00:00.123456789+00:00' }),
      ),
    ).toEqual({
      kind: 'uplink',
      deviceId: 'node-1',
      devEui: '0004a30b001c0530',
      bytesHex: '08696157',
      recvTimeMs: Date.parse('2026-12-02T06:00:00.123Z'),
      recvTime: '2026-12-02T06:00:00.123456789+00:00',
      radio: { frameCounter: 41, fPort: 2, gatewayCount: 2, rssi: -71, snr: 8.75, spreadingFactor: 9 },
    });
  });

  it('reads a status event as the battery level and margin, without one when it cannot be measured', () => {
    const time = '2026-12-02T06:00:00Z';
    expect(
      readChirpstackEvent(
        'status',
        chirpstackStatus('node-1', '0004a30b001c0530', time, { margin: 7, batteryLevel: 15.5 }),
      ),
    ).toMatchObject({
      kind: 'status',
      bytesHex: undefined,
      radio: { battery: 15.5, batteryMargin: 7 },
    });
    const mains = readChirpstackEvent(
      'status',
      chirpstackStatus('node-1', '0004a30b001c0530', time, {
        margin: 3,
        externalPowerSource: true,
        batteryLevel: 0,
      }),
    );
    expect(mains).toMatchObject({ radio: { batteryMargin: 3 } });
    expect((mains as { radio: object }).radio).not.toHaveProperty('battery');
    const unknown = readChirpstackEvent(
      'status',
      chirpstackStatus('node-1', '0004a30b001c0530', time, { margin: 3 }),
    );
    expect((unknown as { radio: object }).radio).not.toHaveProperty('battery');
  });

  it('takes every other event type as ignored, known or not', () => {
    for (const [event, body] of [
      ['join', chirpstackJoin('node-1', '0004a30b001c0530')],
      ['log', chirpstackLog('node-1', '0004a30b001c0530')],
      ['some-future-event', chirpstackJoin('node-1', '0004a30b001c0530')],
    ] as const) {
      expect(readChirpstackEvent(event, body)).toMatchObject({
        kind: 'ignored',
        type: event,
        deviceId: 'node-1',
      });
    }
  });

  it('refuses an event without deviceInfo', () => {
    expect(readChirpstackEvent('up', { time: '2026-12-02T06:00:00Z' })).toHaveProperty('problem');
  });
});

describe('frames of a trial', () => {
  it('recognises either server’s message in a text, and nothing else', () => {
    expect(networkDataOf(JSON.stringify(ttsUplink(FRAME)))).toMatchObject({
      kind: 'uplink',
      bytesHex: '08696157',
    });
    expect(networkDataOf(JSON.stringify(chirpstackUp(FRAME)))).toMatchObject({ kind: 'uplink' });
    const status = chirpstackStatus('node-1', '0004a30b001c0530', '2026-12-02T06:00:00Z', {
      margin: 1,
      batteryLevel: 50,
    });
    expect(networkDataOf(JSON.stringify(status))).toMatchObject({ kind: 'status', radio: { battery: 50 } });
    expect(networkDataOf(JSON.stringify(ttsJoinAccept('node-1', '0004A30B001C0530')))).toBeUndefined();
    expect(networkDataOf('{"deviceName":"x"}')).toBeUndefined();
    expect(networkDataOf('0869')).toBeUndefined();
  });

  it('reads bytes written in hex, with their port before a colon', () => {
    expect(handWrittenFrame('2:08 69 61 57')).toEqual({ bytesHex: '08696157', fPort: 2 });
    expect(handWrittenFrame('0A0b')).toEqual({ bytesHex: '0a0b', fPort: 1 });
    expect(handWrittenFrame('abc')).toHaveProperty('problem');
    expect(handWrittenFrame('300:00')).toHaveProperty('problem');
    expect(handWrittenFrame('{"a":1}')).toHaveProperty('problem');
  });
});
