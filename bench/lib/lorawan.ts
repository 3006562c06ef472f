/**
 * The LoRaWAN scenario's two ways of taking one sensor's uplinks (docs/lorawan.md): the same The
 * Things Stack webhook message posted to `/gateway/submit/<KEY>` with a `"deviceName"` glued on and
 * read by a `parsePayload` that base64-decodes its frame (what a user had to do before), or posted
 * as it is to `/tts/<KEY>` and read by the vendor's TS013 codec. Both decode the same bytes with the
 * same code into the bench definition's four data points.
 */
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { ttsUplink } from '../../scripts/lib/network-messages.ts';
import { BENCH_SPEC, deviceName } from './provision.ts';

/** The port the bench's frames are sent on; the decoders refuse any other. */
export const FRAME_PORT = 2;

/**
 * The vendor's decoding, shared word for word by both parsers: Temperature int16 big-endian in
 * hundredths of °C, Humidity one byte in %, CO2 uint16 in ppm, Battery uint16 in mV.
 */
const DECODE = `
function decodeFrame(b) {
  var raw = (b[0] << 8) | b[1];
  return {
    Temperature: (raw > 0x7fff ? raw - 0x10000 : raw) / 100,
    Humidity: b[2],
    CO2: (b[3] << 8) | b[4],
    Battery: (b[5] << 8) | b[6],
  };
}`;

/** The codec as a vendor ships it (TS013 Payload Codec API). */
export const LORAWAN_CODEC = `${DECODE}
function decodeUplink(input) {
  if (input.fPort !== ${FRAME_PORT} || input.bytes.length !== 7) {
    return { errors: ['unknown frame: port ' + input.fPort + ', ' + input.bytes.length + ' bytes'] };
  }
  return { data: decodeFrame(input.bytes), warnings: [] };
}`;

/** The glue a user wrote before: the webhook message as JSON, its frame through base64ToBytes. */
export const LORAWAN_PARSE_PAYLOAD = `${DECODE}
function parsePayload(payloadStr) {
  var up = JSON.parse(payloadStr).uplink_message;
  var bytes = base64ToBytes(up.frm_payload);
  if (up.f_port !== ${FRAME_PORT} || bytes.length !== 7) {
    throw new Error('unknown frame: port ' + up.f_port + ', ' + bytes.length + ' bytes');
  }
  return decodeFrame(bytes);
}`;

/** The bench definition with the codec as its parser. */
export const LORAWAN_CODEC_SPEC: DefinitionSpec = { ...BENCH_SPEC, parserFormat: 'ts013' };

export interface LorawanPath {
  /** The gateway path the messages are posted to, before the API key. */
  path: 'gateway/submit' | 'tts';
  spec: DefinitionSpec;
  parser: string;
  /** The body of a message of `device`: the TTS uplink, and for /gateway/submit its deviceName. */
  body: (device: number, uplink: Record<string, unknown>) => string;
}

export const GLUE_PATH: LorawanPath = {
  path: 'gateway/submit',
  spec: BENCH_SPEC,
  parser: LORAWAN_PARSE_PAYLOAD,
  body: (device, uplink) => JSON.stringify({ ...uplink, deviceName: deviceName(device) }),
};

export const TTS_PATH: LorawanPath = {
  path: 'tts',
  spec: LORAWAN_CODEC_SPEC,
  parser: LORAWAN_CODEC,
  body: (_device, uplink) => JSON.stringify(uplink),
};

/**
 * The values of the n-th uplink of a device. Temperature walks 20 → 29.9 and back to 20 every 100
 * uplinks, each device starting at its own point at or below the WARNING threshold (20.1–25): from
 * every device's second uplink on about 2 % of uplinks cross it (up, and once a walk comes round,
 * down), as in the other scenarios, however few uplinks of a device a window holds (a fleet's
 * devices send about twice in a window and its warm-up).
 */
export function lorawanValues(device: number, n: number) {
  const k = n + 1 + (device % 50);
  return { t: 20 + (k % 100) / 10, h: 40 + (n % 20), c: 600 + (n % 50), b: 3000 };
}

/** The frame's bytes of those values, as the decoders read them. */
export function frameBytes(v: ReturnType<typeof lorawanValues>): number[] {
  const t = Math.round(v.t * 100) & 0xffff;
  return [t >> 8, t & 0xff, v.h, v.c >> 8, v.c & 0xff, v.b >> 8, v.b & 0xff];
}

/** A DevEUI of its own per device (16 hex digits). */
const devEuiOf = (device: number) => `70B3D57ED0${device.toString(16).padStart(6, '0')}`.toUpperCase();

/**
 * The TTS webhook message of the n-th uplink of a device, received now: its frame counter is n + 1
 * (a redelivery would repeat both), one gateway heard it.
 */
export function lorawanUplink(device: number, n: number, nowMs = Date.now()): Record<string, unknown> {
  return ttsUplink({
    deviceId: deviceName(device),
    devEui: devEuiOf(device),
    bytes: frameBytes(lorawanValues(device, n)),
    fPort: FRAME_PORT,
    fCnt: n + 1,
    // TTS writes nanoseconds.
    receivedAt: new Date(nowMs).toISOString().replace('Z', '123456Z'),
    gateways: [{ rssi: -97 - (device % 20), snr: 7.25 }],
  });
}
