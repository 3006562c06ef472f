/**
 * What a LoRaWAN network server's message says, read from its JSON (docs/lorawan.md): The Things
 * Stack v3 webhook messages and ChirpStack v4 integration events. An uplink is data (its frame's
 * bytes, port, counter, receive time and radio metadata); ChirpStack's `status` event gives the
 * battery level; every other message type is known and ignored. Both servers leave out fields whose
 * value is 0, "" or false (a frame counter of 0 is absent). Pure: no I/O, used by the gateway to
 * route and answer and by the worker to make readings.
 */

/** The network servers Vigil takes messages from, by their gateway path (`/tts/<KEY>`, `/chirpstack/<KEY>`). */
export const NETWORK_SERVERS = ['tts', 'chirpstack'] as const;
export type NetworkServer = (typeof NETWORK_SERVERS)[number];

/** The ChirpStack event types of its HTTP integration's `?event=` (and MQTT topic's last level). */
export const CHIRPSTACK_EVENTS = [
  'up',
  'status',
  'join',
  'ack',
  'txack',
  'log',
  'location',
  'integration',
] as const;

/** What radio metadata a data point can take (a definition's `radio:` field). */
export const RADIO_FIELDS = [
  'rssi',
  'snr',
  'gatewayCount',
  'frameCounter',
  'fPort',
  'spreadingFactor',
  'battery',
  'batteryMargin',
] as const;
export type RadioField = (typeof RADIO_FIELDS)[number];

/** The radio metadata of one message, by field; a field the message does not give is absent. */
export type RadioData = Partial<Record<RadioField, number>>;

/** Who a message is about: the network server's device id (or name) and DevEUI (lowercase). */
export interface NetworkDevice {
  deviceId: string;
  /** 16 lowercase hex digits; undefined when the message has none. */
  devEui: string | undefined;
}

/** An uplink (TTS `uplink_message`, ChirpStack `up`) or a status report (ChirpStack `status`). */
export interface NetworkData extends NetworkDevice {
  kind: 'uplink' | 'status';
  /** The frame's application payload as lowercase hex; undefined when it has none (a status, a MAC-only frame). */
  bytesHex: string | undefined;
  /** The network server's receive time, epoch ms. */
  recvTimeMs: number;
  /**
   * The receive time as the network server wrote it (to the nanosecond): with the device and the
   * frame counter, what identifies the frame when the message is delivered again.
   */
  recvTime: string;
  radio: RadioData;
}

/** A message that is not data (a join, a downlink event, a log line…): accepted and logged as ignored. */
export interface IgnoredMessage extends Partial<NetworkDevice> {
  kind: 'ignored';
  /** The message type as the network server names it (`join_accept`, `txack`…). */
  type: string;
}

export type NetworkMessage = NetworkData | IgnoredMessage;

/** Why a body is not a message of that network server. */
export interface NetworkProblem {
  problem: string;
}

const EUI = /^[0-9a-fA-F]{16}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The TTS message types that are not uplinks, as the webhook's top-level field names them. */
const TTS_OTHER_TYPES = [
  'join_accept',
  'uplink_normalized',
  'downlink_ack',
  'downlink_nack',
  'downlink_sent',
  'downlink_failed',
  'downlink_queued',
  'downlink_queue_invalidated',
  'location_solved',
  'service_data',
] as const;

/** Reads a The Things Stack v3 webhook message. */
export function readTtsMessage(value: unknown): NetworkMessage | NetworkProblem {
  if (!isObject(value)) return { problem: 'the body is not a JSON object' };
  const ids = value.end_device_ids;
  if (!isObject(ids)) return { problem: 'the message has no end_device_ids object' };
  const device = deviceOf(ids.device_id, ids.dev_eui, 'end_device_ids.device_id', 'end_device_ids.dev_eui');
  if ('problem' in device) return device;
  const up = value.uplink_message;
  if (up === undefined) {
    const type = TTS_OTHER_TYPES.find((t) => value[t] !== undefined) ?? 'unknown';
    return { kind: 'ignored', type, ...device };
  }
  if (!isObject(up)) return { problem: 'uplink_message is not an object' };
  const received = up.received_at ?? value.received_at;
  const time = timeOf(received, 'uplink_message.received_at');
  if ('problem' in time) return time;
  const bytes = base64Hex(up.frm_payload, 'uplink_message.frm_payload');
  if (typeof bytes === 'object') return bytes;
  const radio: RadioData = {};
  const fCnt = counterOf(up.f_cnt, 'uplink_message.f_cnt');
  if (typeof fCnt === 'object') return fCnt;
  radio.frameCounter = fCnt;
  if (up.f_port !== undefined) {
    const port = counterOf(up.f_port, 'uplink_message.f_port', MAX_PORT);
    if (typeof port === 'object') return port;
    radio.fPort = port;
  } else if (bytes !== undefined) radio.fPort = 0;
  addGateways(radio, up.rx_metadata);
  const sf = path(up, 'settings', 'data_rate', 'lora', 'spreading_factor');
  if (typeof sf === 'number') radio.spreadingFactor = sf;
  const battery = path(up, 'last_battery_percentage', 'value');
  if (typeof battery === 'number' && Number.isFinite(battery)) radio.battery = battery;
  return { kind: 'uplink', ...device, bytesHex: bytes, recvTimeMs: time.ms, recvTime: time.text, radio };
}

/** Reads a ChirpStack v4 integration event (JSON encoding) of type `event`. */
export function readChirpstackEvent(event: string, value: unknown): NetworkMessage | NetworkProblem {
  if (!isObject(value)) return { problem: 'the body is not a JSON object' };
  const info = value.deviceInfo;
  if (!isObject(info)) return { problem: 'the event has no deviceInfo object' };
  const device = deviceOf(info.deviceName, info.devEui, 'deviceInfo.deviceName', 'deviceInfo.devEui');
  if ('problem' in device) return device;
  if (event !== 'up' && event !== 'status') return { kind: 'ignored', type: event, ...device };
  const time = timeOf(value.time, 'time');
  if ('problem' in time) return time;
  const radio: RadioData = {};
  if (event === 'status') {
    if (typeof value.margin === 'number') radio.batteryMargin = value.margin;
    // Mains-powered devices, and those that cannot measure their battery, give no level.
    const unavailable = value.batteryLevelUnavailable === true || value.externalPowerSource === true;
    const level = value.batteryLevel ?? 0;
    if (!unavailable && typeof level === 'number' && Number.isFinite(level)) radio.battery = level;
    return {
      kind: 'status',
      ...device,
      bytesHex: undefined,
      recvTimeMs: time.ms,
      recvTime: time.text,
      radio,
    };
  }
  const bytes = base64Hex(value.data, 'data');
  if (typeof bytes === 'object') return bytes;
  const fCnt = counterOf(value.fCnt, 'fCnt');
  if (typeof fCnt === 'object') return fCnt;
  radio.frameCounter = fCnt;
  if (value.fPort !== undefined) {
    const port = counterOf(value.fPort, 'fPort', MAX_PORT);
    if (typeof port === 'object') return port;
    radio.fPort = port;
  } else if (bytes !== undefined) radio.fPort = 0;
  addGateways(radio, value.rxInfo);
  const sf = path(value, 'txInfo', 'modulation', 'lora', 'spreadingFactor');
  if (typeof sf === 'number') radio.spreadingFactor = sf;
  return { kind: 'uplink', ...device, bytesHex: bytes, recvTimeMs: time.ms, recvTime: time.text, radio };
}

/** Reads a message of `server` (`event`: ChirpStack's event type). */
export function readNetworkMessage(
  server: NetworkServer,
  event: string | undefined,
  value: unknown,
): NetworkMessage | NetworkProblem {
  return server === 'tts' ? readTtsMessage(value) : readChirpstackEvent(event ?? '', value);
}

/** The best RSSI and SNR of the gateways that heard the frame, and how many did. */
function addGateways(radio: RadioData, list: unknown): void {
  if (!Array.isArray(list)) {
    radio.gatewayCount = 0;
    return;
  }
  let rssi = -Infinity;
  let snr = -Infinity;
  for (const rx of list) {
    if (!isObject(rx)) continue;
    // A field of 0 is left out of the JSON: a gateway listed without rssi or snr heard it at 0.
    const r = rx.rssi ?? rx.channel_rssi ?? 0;
    const s = rx.snr ?? 0;
    if (typeof r === 'number' && r > rssi) rssi = r;
    if (typeof s === 'number' && s > snr) snr = s;
  }
  radio.gatewayCount = list.length;
  if (rssi > -Infinity) radio.rssi = rssi;
  if (snr > -Infinity) radio.snr = snr;
}

function deviceOf(
  id: unknown,
  eui: unknown,
  idField: string,
  euiField: string,
): NetworkDevice | NetworkProblem {
  if (typeof id !== 'string' || id === '') return { problem: `${idField} is missing` };
  if (eui === undefined) return { deviceId: id, devEui: undefined };
  if (typeof eui !== 'string' || !EUI.test(eui)) return { problem: `${euiField} is not 16 hex digits` };
  return { deviceId: id, devEui: eui.toLowerCase() };
}

function timeOf(value: unknown, field: string): { ms: number; text: string } | NetworkProblem {
  if (typeof value !== 'string') return { problem: `${field} is missing` };
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? { ms, text: value } : { problem: `${field} is not an ISO 8601 time` };
}

/** A frame counter or port (at most `max`): absent is 0 (both servers leave zero out). */
function counterOf(value: unknown, field: string, max = Number.MAX_SAFE_INTEGER): number | NetworkProblem {
  if (value === undefined) return 0;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max
    ? value
    : { problem: `${field} is not a whole number from 0 to ${max}` };
}

const MAX_PORT = 255;

function base64Hex(value: unknown, field: string): string | undefined | NetworkProblem {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length % 4 !== 0 || !BASE64.test(value))
    return { problem: `${field} is not base64` };
  return Buffer.from(value, 'base64').toString('hex');
}

function path(value: Record<string, unknown>, ...keys: string[]): unknown {
  let at: unknown = value;
  for (const key of keys) {
    if (!isObject(at)) return undefined;
    at = at[key];
  }
  return at;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The uplink or status report a text is, when it is one of either server's messages (a stored
 * payload's body, a message pasted into a trial): The Things Stack's by its `end_device_ids`,
 * ChirpStack's by its `deviceInfo` (an `up` event, or a `status` one by its battery fields).
 */
export function networkDataOf(text: string): NetworkData | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value)) return undefined;
  const message =
    value.end_device_ids !== undefined
      ? readTtsMessage(value)
      : value.deviceInfo !== undefined
        ? readChirpstackEvent(
            value.margin !== undefined || value.batteryLevel !== undefined ? 'status' : 'up',
            value,
          )
        : undefined;
  return message && 'kind' in message && message.kind !== 'ignored' ? message : undefined;
}

/**
 * A frame written by hand for a codec's trial: its bytes in hex (spaces allowed), optionally after
 * its port and a colon (`2:01 0a ff`; port 1 when none is given).
 */
export function handWrittenFrame(text: string): { bytesHex: string; fPort: number } | NetworkProblem {
  const match = /^\s*(?:(\d{1,3})\s*:)?\s*([0-9a-fA-F\s]*)$/.exec(text);
  const hex = match?.[2]?.replace(/\s+/g, '') ?? '';
  const port = match?.[1] === undefined ? 1 : Number(match[1]);
  if (!match || hex.length % 2 !== 0 || port > 255) {
    return {
      problem:
        'a codec is tried on a network server message (JSON) or on bytes in hex, like "2:01 0a ff" (port 2)',
    };
  }
  return { bytesHex: hex.toLowerCase(), fPort: port };
}
