/**
 * What the gateway knows about a submission before it is queued: the body as text (or hex), and
 * the checks that can be decided synchronously (docs/ingestion.md#http-paths). Pure: no I/O.
 */
import { isUtf8 } from 'node:buffer';
import type { ErrorCode } from '../errors/catalogue.ts';
import type { GatewayKind } from '../domain/ingest-item.ts';

/** The environment's pre-parser as the gateway sees it. */
export type PreparserState = 'none' | 'disabled' | 'enabled';

/** Longest device name accepted from `?deviceName=` or an MQTT topic (docs/domain.md#names). */
export const MAX_DEVICE_NAME_LENGTH = 128;

/** The body as queued: valid UTF-8 becomes text, anything else lowercase hex with `bodyIsHex`. */
export function decodeBody(bytes: Buffer): { body: string; bodyIsHex: boolean } {
  return isUtf8(bytes)
    ? { body: bytes.toString('utf8'), bodyIsHex: false }
    : { body: bytes.toString('hex'), bodyIsHex: true };
}

/** Gateways that always run the environment's pre-parser (and need one to be set). */
export const needsPreparser = (kind: GatewayKind): boolean => kind !== 'submit' && kind !== 'raw';

export interface Rejection {
  code: ErrorCode;
  message: string;
}

/**
 * Parses the body of a JSON gateway. Returns the parsed value or a rejection; an empty body and a
 * body that is not valid UTF-8 are INVALID_JSON.
 */
export function parseJsonBody(body: string, bodyIsHex: boolean): { value: unknown } | Rejection {
  if (bodyIsHex) return { code: 'INVALID_JSON', message: 'The body is not valid UTF-8, so not JSON.' };
  if (body.trim() === '') return { code: 'INVALID_JSON', message: 'The body is empty; JSON was expected.' };
  try {
    return { value: JSON.parse(body) as unknown };
  } catch (err) {
    return { code: 'INVALID_JSON', message: `The body is not valid JSON: ${(err as Error).message}` };
  }
}

/** The `deviceName` of a JSON object body, when it is a non-empty string. */
export function deviceNameInBody(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const name = (value as Record<string, unknown>).deviceName;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** Checks a device name given outside the body; undefined when acceptable. */
export function checkExternalDeviceName(name: string | undefined): Rejection | undefined {
  if (name === undefined) return undefined;
  if (name === '' || name.length > MAX_DEVICE_NAME_LENGTH) {
    return {
      code: 'MISSING_DEVICE_NAME',
      message: `deviceName must be 1–${MAX_DEVICE_NAME_LENGTH} characters.`,
    };
  }
  return undefined;
}

/**
 * Whether the gateway must know the environment's pre-parser to decide on this submission: always
 * for the pre-parser gateways, and for /gateway/submit and /raw only when no device name is at hand.
 */
export function needsPreparserState(kind: GatewayKind, jsonValue: unknown, deviceName: string | undefined) {
  if (needsPreparser(kind)) return true;
  if (kind === 'raw') return deviceName === undefined;
  return deviceNameInBody(jsonValue) === undefined;
}

/**
 * The synchronous verdict on a submission whose body was already decoded (and parsed, for JSON
 * gateways): NO_PREPARSER for a pre-parser gateway without one, MISSING_DEVICE_NAME where no enabled
 * pre-parser could supply the name. `preparser` is only consulted when {@link needsPreparserState}.
 */
export function checkDeviceSource(
  kind: GatewayKind,
  jsonValue: unknown,
  deviceName: string | undefined,
  preparser: PreparserState | undefined,
): Rejection | undefined {
  if (needsPreparser(kind)) {
    return preparser === 'none'
      ? { code: 'NO_PREPARSER', message: 'This gateway needs a pre-parser; the environment has none.' }
      : undefined;
  }
  if (preparser === 'enabled') return undefined;
  if (kind === 'raw' && deviceName === undefined) {
    return {
      code: 'MISSING_DEVICE_NAME',
      message:
        'No pre-parser is enabled: give the device name as ?deviceName= (MQTT: raw/<KEY>/<deviceName>).',
    };
  }
  if (kind === 'submit' && deviceNameInBody(jsonValue) === undefined) {
    return {
      code: 'MISSING_DEVICE_NAME',
      message: 'No pre-parser is enabled: the body must be a JSON object with a string "deviceName".',
    };
  }
  return undefined;
}
