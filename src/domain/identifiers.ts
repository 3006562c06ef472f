/**
 * Identifier rules (docs/domain.md#names). Names end up in Redis keys, InfluxDB tags and Grafana
 * variables, so anything else is refused with a message that says what is allowed. The rules
 * agree with src/tenancy/names.ts (ASCII letters only).
 */
import { AppError } from '../errors/app-error.ts';
import { hasControlCharacters } from '../lib/control-characters.ts';

/** Environment names: 1–63 lowercase letters, digits and '-', starting with a letter or digit. */
export const ENV_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Device, definition and data point names: 1–128 letters, digits, `_ - . :` and inner spaces
 * (no leading or trailing space).
 */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-](?:[A-Za-z0-9_.: -]{0,126}[A-Za-z0-9_.:-])?$/;

/** Usernames: 1–128 letters, digits and `_ . @ + -` (an e-mail address fits). */
export const USERNAME_PATTERN = /^[A-Za-z0-9_.@+-]{1,128}$/;

export type NameKind = 'device' | 'definition' | 'data point' | 'username' | 'key name' | 'token name';

/** Throws INVALID_INPUT unless `name` is a valid environment name. */
export function assertEnvName(name: unknown): asserts name is string {
  if (typeof name === 'string' && ENV_NAME_PATTERN.test(name)) return;
  throw new AppError(
    'INVALID_INPUT',
    `invalid environment name ${show(name)}: use 1-63 lowercase letters, digits and '-', starting with a letter or digit`,
  );
}

/** Throws INVALID_INPUT unless `name` is a valid name of `kind`. */
export function assertName(kind: NameKind, name: unknown): asserts name is string {
  const problem = nameProblem(kind, name);
  if (problem !== undefined) throw new AppError('INVALID_INPUT', problem);
}

/** The reason `name` is not a valid name of `kind`, or undefined when it is valid. */
export function nameProblem(kind: NameKind, name: unknown): string | undefined {
  if (kind === 'username') {
    return typeof name === 'string' && USERNAME_PATTERN.test(name)
      ? undefined
      : `invalid username ${show(name)}: use 1-128 letters, digits and '_', '.', '@', '+', '-'`;
  }
  if (typeof name === 'string' && NAME_PATTERN.test(name)) return undefined;
  return `invalid ${kind} name ${show(name)}: use 1-128 letters, digits, '_', '-', '.', ':' and inner spaces`;
}

/** Longest display name, in characters. */
export const DISPLAY_NAME_MAX = 200;

/**
 * The reason `value` is not a valid display name, or undefined when it is: 1–200 characters, none
 * of them a control character (CR, LF, bidi controls…). A display name is free text, but it
 * reaches email subjects, chat messages and terminals, where such characters forge lines.
 */
export function displayNameProblem(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length >= 1 && value.length <= DISPLAY_NAME_MAX) {
    if (!hasControlCharacters(value)) return undefined;
    return `invalid display name ${show(value)}: control characters (line breaks, tabs, bidi controls) are not allowed`;
  }
  return `invalid display name ${show(value)}: use 1-${DISPLAY_NAME_MAX} characters`;
}

function show(value: unknown): string {
  if (typeof value !== 'string') return value === undefined ? '(missing)' : `(${typeof value})`;
  return JSON.stringify(value.length > 140 ? `${value.slice(0, 140)}…` : value);
}

/** Label keys: 1–63 letters, digits and `_ . -`, starting with a letter (`site`, `customer`, `devEui`). */
export const LABEL_KEY_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/;
/** Longest label value, in characters. */
export const LABEL_VALUE_MAX = 200;
/** Most labels on one device. */
export const LABELS_MAX = 32;

/**
 * The reason `labels` is not a valid label set, or undefined when it is: at most 32 labels, each key
 * a LABEL_KEY_PATTERN, each value 1–200 characters without control characters (values reach
 * notifications and terminals, as display names do).
 */
export function labelsProblem(labels: Readonly<Record<string, unknown>>): string | undefined {
  const entries = Object.entries(labels);
  if (entries.length > LABELS_MAX) return `too many labels (${entries.length}): at most ${LABELS_MAX}`;
  for (const [key, value] of entries) {
    if (!LABEL_KEY_PATTERN.test(key))
      return `invalid label key ${show(key)}: use 1-63 letters, digits, '_', '.', '-', starting with a letter`;
    if (typeof value !== 'string' || value.length < 1 || value.length > LABEL_VALUE_MAX)
      return `invalid value of label ${key}: use 1-${LABEL_VALUE_MAX} characters`;
    if (hasControlCharacters(value))
      return `invalid value of label ${key}: control characters (line breaks, tabs, bidi controls) are not allowed`;
  }
  return undefined;
}

/**
 * The label that holds a LoRaWAN device's DevEUI: unique within its environment, so that an uplink
 * a network server sends finds its device by it (src/tenancy/catalog.ts).
 */
export const DEV_EUI_LABEL = 'devEui';
/** A DevEUI as a label takes it: 16 hex digits, either case (stored lowercase). */
export const DEV_EUI_PATTERN = /^[0-9A-Fa-f]{16}$/;

/** The reason `value` is not a DevEUI, or undefined when it is one. */
export function devEuiProblem(value: unknown): string | undefined {
  if (typeof value === 'string' && DEV_EUI_PATTERN.test(value)) return undefined;
  return `invalid value of label ${DEV_EUI_LABEL} ${show(value)}: use 16 hex digits (upper or lower case), such as 70b3d57ed0001234`;
}

/** A DevEUI as it is stored and looked up: lowercase; null when it is not one. */
export const normalDevEui = (value: unknown): string | null =>
  typeof value === 'string' && DEV_EUI_PATTERN.test(value) ? value.toLowerCase() : null;

/** `labels` as a device keeps them: its devEui lowercase, every other label as it is. */
export function normalDeviceLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const eui = labels[DEV_EUI_LABEL];
  if (eui === undefined) return { ...labels };
  return { ...labels, [DEV_EUI_LABEL]: normalDevEui(eui) ?? eui };
}

/** As labelsProblem, for a device's labels: a devEui label must also be a DevEUI. */
export function deviceLabelsProblem(labels: Readonly<Record<string, unknown>>): string | undefined {
  return (
    labelsProblem(labels) ??
    (Object.hasOwn(labels, DEV_EUI_LABEL) ? devEuiProblem(labels[DEV_EUI_LABEL]) : undefined)
  );
}
