/**
 * MQTT topics mirror the HTTP paths: `<path>/<KEY>`, plus `<raw path>/<KEY>/<deviceName>` for the
 * raw kinds, and `<path>` alone (the key is then the connection's password). The bridge also reads
 * ChirpStack's integration topics, which name an application instead of a key.
 */
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway, type GatewayKind } from '../domain/ingest-item.ts';

export interface GatewayTopic {
  kind: GatewayKind;
  /** The key segment; undefined for the key-less form (key from the password). */
  key?: string;
  deviceName?: string;
}

/** Kinds ordered so that the two-segment `gateway/submit` is tried like any other. */
const BY_PATH = GATEWAY_KINDS.map((kind) => ({ kind, segments: GATEWAY_PATHS[kind].split('/') }));

/** Splits a topic into the gateway kind and what follows it, or undefined for other topics. */
function matchKind(levels: string[]): { kind: GatewayKind; rest: string[] } | undefined {
  for (const { kind, segments } of BY_PATH) {
    if (segments.every((s, i) => levels[i] === s)) return { kind, rest: levels.slice(segments.length) };
  }
  return undefined;
}

/** The gateway a publish topic addresses, or undefined when the topic is not one of Vigil's. */
export function parsePublishTopic(topic: string): GatewayTopic | undefined {
  const match = matchKind(topic.split('/'));
  if (!match) return undefined;
  const { kind, rest } = match;
  if (rest.length === 0) return { kind };
  const [key, deviceName, ...extra] = rest;
  if (key === undefined || key === '' || extra.length > 0) return undefined;
  if (deviceName === undefined) return { kind, key };
  if (isJsonGateway(kind) || deviceName === '') return undefined;
  return { kind, key, deviceName };
}

/**
 * The literal API key of a subscription filter, or undefined when the filter is not confined to
 * one key's topics (wildcards in or before the key segment, foreign topics).
 */
export function subscriptionKey(filter: string): string | undefined {
  const match = matchKind(filter.split('/'));
  const key = match?.rest[0];
  if (key === undefined || key === '' || key.includes('+') || key.includes('#')) return undefined;
  return key;
}

/** A topic of ChirpStack v4's MQTT integration (its default `event_topic`). */
export interface ChirpstackTopic {
  applicationId: string;
  devEui: string;
  /** The event type: `up`, `status`, `join`, `ack`, `txack`, `log`, `location`, `integration`. */
  event: string;
}

/** The filter of every event of one ChirpStack application: `application/<id>/device/+/event/+`. */
export const chirpstackFilter = (applicationId: string): string =>
  `application/${applicationId}/device/+/event/+`;

/**
 * The ChirpStack event a topic `application/<applicationId>/device/<devEui>/event/<event>` carries,
 * or undefined for other topics. Vigil's own forms never start with `application/`.
 */
export function parseChirpstackTopic(topic: string): ChirpstackTopic | undefined {
  const [root, applicationId, device, devEui, eventLevel, event, ...extra] = topic.split('/');
  if (root !== 'application' || device !== 'device' || eventLevel !== 'event' || extra.length > 0)
    return undefined;
  if (applicationId === undefined || devEui === undefined || event === undefined) return undefined;
  return { applicationId, devEui, event };
}
