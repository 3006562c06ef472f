/**
 * What a submission is, whichever way it came: the six gateway kinds (HTTP paths and MQTT topics),
 * the network servers' paths, and the item the entries queue for the worker. Pure: no I/O.
 */
import type { NetworkServer } from './network-messages.ts';

/** The six gateway variants (HTTP paths and MQTT topics). */
export const GATEWAY_KINDS = [
  'submit',
  'raw',
  'preparserfirst',
  'rawpreparserfirst',
  'preparseronly',
  'rawpreparseronly',
] as const;
export type GatewayKind = (typeof GATEWAY_KINDS)[number];

/** URL path / MQTT topic segment of each gateway kind. */
export const GATEWAY_PATHS: Record<GatewayKind, string> = {
  submit: 'gateway/submit',
  raw: 'raw',
  preparserfirst: 'preparserfirst',
  rawpreparserfirst: 'rawpreparserfirst',
  preparseronly: 'preparseronly',
  rawpreparseronly: 'rawpreparseronly',
};

/**
 * The `gateway` of a queue item that is no submission: a device's timer came due (a rule that waits,
 * a stale rule). The scheduler queues it into the device's partition, so that the partition's owner
 * applies it in order with the device's payloads, under its lease.
 */
export const TIMER_GATEWAY = 'timer';

/** The queue item of a tick of `device`'s timer, due at `dueMs`. */
export function tickItem(env: string, device: string, dueMs: number): IngestItem {
  return {
    id: `timer-${dueMs}`,
    env,
    gateway: TIMER_GATEWAY,
    via: 'http',
    receivedMs: dueMs,
    body: '',
    bodyIsHex: false,
    deviceName: device,
    client: 'scheduler',
  };
}

/** Where a submission came in: a gateway kind, or a network server's path (`/tts/`, `/chirpstack/`). */
export type IngestGateway = GatewayKind | NetworkServer;

/** True for the gateways whose body must be JSON. */
export const isJsonGateway = (kind: IngestGateway): boolean => !kind.startsWith('raw');

/** True for a network server's message (network-messages.ts reads its body). */
export const isNetworkServer = (kind: IngestGateway | typeof TIMER_GATEWAY): kind is NetworkServer =>
  kind === 'tts' || kind === 'chirpstack';

/** One accepted submission, as queued. */
export interface IngestItem {
  /** Ingest id returned to the device (`202 {data:{id}}`), unique. */
  id: string;
  env: string;
  /** How it came (TIMER_GATEWAY: a timer tick of device `deviceName`, not a submission). */
  gateway: IngestGateway | typeof TIMER_GATEWAY;
  /** How it arrived. */
  via: 'http' | 'mqtt';
  /** Epoch ms when the gateway received it. */
  receivedMs: number;
  /** The body as text; when `bodyIsHex` the body was not valid UTF-8 and this is its lowercase hex. */
  body: string;
  bodyIsHex: boolean;
  /** Device name given outside the body (`?deviceName=` on /raw, `raw/<KEY>/<device>` topic). */
  deviceName?: string;
  /**
   * The body's `deviceName` as the gateway read it while checking a /gateway/submit body (a
   * non-empty string, else absent): the worker's default rule takes it instead of parsing the body
   * a second time, and without it the body has no device name.
   */
  nameInBody?: string;
  /** Client address (IP or MQTT client id). */
  client: string;
  /** A network server's message type (ChirpStack's `?event=`: `up`, `status`); network servers only. */
  event?: string;
  /**
   * The id of the API key it came with (network servers only): a key may create the devices it does
   * not know yet.
   */
  keyId?: string;
  /**
   * The routing key, when the gateway worked it out while checking the body (ingest-producer.ts
   * routingKey): a symbol key, so it is never written to the queue.
   */
  [ROUTING_KEY]?: string;
}

/** Key of IngestItem's routing key worked out at the gateway. */
export const ROUTING_KEY: unique symbol = Symbol('routingKey');
