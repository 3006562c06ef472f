/**
 * Shared vocabulary of the domain: statuses, data types, threshold rules, definitions, events.
 * Pure types; the rules that use them live beside this file.
 */
import type { RadioField } from './network-messages.ts';

/** Data point statuses, least to most severe. */
export const STATUSES = ['SUCCESS', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;
export type Status = (typeof STATUSES)[number];
/** Statuses a rule can set (SUCCESS is the absence of a matching rule). */
export type RuleStatus = Exclude<Status, 'SUCCESS'>;

/** The data types (docs/domain.md#data-types). */
export const DATA_TYPES = [
  'string',
  'integer',
  'number',
  'boolean',
  'temperature',
  'humidity',
  'illuminance',
  'millivolts',
  'co2',
  'occupancy',
  'gps',
] as const;
export type DataType = (typeof DATA_TYPES)[number];

export interface GpsValue {
  lat: number;
  lon: number;
}
/** A value after conversion to its data type (rawValue in API responses). */
export type DataValue = string | number | boolean | GpsValue;

/** One threshold rule: exactly one of above / below / equals. */
export interface ThresholdRule {
  status: RuleStatus;
  above?: number;
  below?: number;
  equals?: string | number | boolean;
  /** Free text used in event messages instead of the generated "Above 25 °C". */
  description?: string;
  /**
   * The condition must hold this long, in measurement time, before the rule's status is entered
   * (`for: 10m` in a definition); absent: at once.
   */
  forMs?: number;
}

/** A data point that has had no value for `afterMs` (receive time) gets `status`. */
export interface StaleRule {
  afterMs: number;
  status: RuleStatus;
}

/** Rules of one data point, from the definition or a device override. */
export interface ThresholdSet {
  rules: ThresholdRule[];
  /** In the data point's unit; 0 = none. */
  hysteresis: number;
  /** No value for a while (`stale:` in a definition); absent: never stale. */
  stale?: StaleRule;
}

export interface DataPointSpec {
  /** sensorName: the case-sensitive key of parsePayload's result. */
  name: string;
  displayName: string;
  dataType: DataType;
  hysteresis: number;
  thresholds: ThresholdRule[];
  stale?: StaleRule;
  /**
   * Where in the parser's result the value is, when not at its top-level key `name`: a path into
   * nested objects and arrays (`position.latitude`, `channels[0].value`; data-point-paths.ts).
   */
  source?: string;
  /** The value is the message's radio metadata, not the parser's (network servers' messages only). */
  radio?: RadioField;
}

export type Locale = 'en' | 'nl';

/** A device definition as stored (YAML spec plus the parser source). */
export interface DefinitionSpec {
  name: string;
  manufacturer: string;
  version: string;
  icon?: string;
  availability?: { timeoutMinutes?: number; status?: RuleStatus };
  /** `ts013`: the parser is a LoRaWAN Payload Codec API codec (`decodeUplink`); absent: `parsePayload`. */
  parserFormat?: ParserFormat;
  dataPoints: DataPointSpec[];
}

/** The forms a definition's parser can take. */
export const PARSER_FORMATS = ['parsePayload', 'ts013'] as const;
export type ParserFormat = (typeof PARSER_FORMATS)[number];

export type EventCategory = 'Sensors' | 'Availability';

/** An event as stored and as served by the read API (plus internal id/env). */
export interface EventRecord {
  /** Deterministic id, so a replayed job cannot store the same event twice. */
  id: string;
  env: string;
  deviceName: string;
  displayName: string;
  sensorName: string;
  sensorType: string;
  sensorValue: DataValue | number | null;
  eventStatus: Status;
  eventCategory: EventCategory;
  eventMessage: string;
  /** Epoch ms when the event was created. */
  receivedMs: number;
  /**
   * Sub-ms offset (ns) of its history point, unique among the device's events of that millisecond;
   * absent in events stored before it was given (their offset comes from the id).
   */
  ns?: number;
}
