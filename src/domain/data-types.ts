/**
 * The data types (docs/domain.md#data-types): what each is called in the API (sensorType), its units, how a
 * parser's value converts to it (rawValue) and how it is shown (currentValue).
 */
import type { DataType, DataValue, GpsValue, Locale } from './types.ts';

export interface DataTypeInfo {
  /** sensorType in API responses and InfluxDB tags. */
  sensorType: string;
  /** Appended to currentValue; carries its own leading space (' °C') or is empty. */
  units: string;
  /** Fixed decimals in currentValue; null = shown as is (string, number, boolean). */
  decimals: number | null;
}

export const DATA_TYPE_INFO: Record<DataType, DataTypeInfo> = {
  string: { sensorType: 'string', units: '', decimals: null },
  integer: { sensorType: 'integer', units: '', decimals: 0 },
  number: { sensorType: 'number', units: '', decimals: null },
  boolean: { sensorType: 'boolean', units: '', decimals: null },
  temperature: { sensorType: 'tempC', units: ' °C', decimals: 1 },
  humidity: { sensorType: 'relativeHumidity', units: ' %', decimals: 1 },
  illuminance: { sensorType: 'lux', units: ' lx', decimals: 0 },
  millivolts: { sensorType: 'milliVolts', units: ' mV', decimals: 0 },
  co2: { sensorType: 'co2', units: ' ppm', decimals: 0 },
  occupancy: { sensorType: 'occupancy', units: '', decimals: 0 },
  gps: { sensorType: 'gps', units: '', decimals: 5 },
};

/** Types whose values are numbers: the only ones `above` / `below` rules apply to. */
export const NUMERIC_DATA_TYPES: ReadonlySet<DataType> = new Set<DataType>([
  'integer',
  'number',
  'temperature',
  'humidity',
  'illuminance',
  'millivolts',
  'co2',
  'occupancy',
]);

export const isNumericDataType = (dataType: DataType): boolean => NUMERIC_DATA_TYPES.has(dataType);

export type Conversion = { ok: true; value: DataValue } | { ok: false; reason: string };

/** Inclusive bounds per numeric type; absent = any finite number. */
const RANGES: Partial<Record<DataType, { min: number; max?: number }>> = {
  humidity: { min: 0, max: 100 },
  illuminance: { min: 0 },
  co2: { min: 0 },
  occupancy: { min: 0 },
};

/**
 * Converts a value returned by a parser to `dataType`. null/undefined give null (skipped
 * silently); anything that cannot be converted, or falls outside the type's range, gives a short
 * human reason ("expected a number between 0 and 100, got 140").
 */
export function convertValue(dataType: DataType, input: unknown): Conversion | null {
  if (input === null || input === undefined) return null;
  switch (dataType) {
    case 'string':
      return convertString(input);
    case 'boolean':
      return convertBoolean(input);
    case 'gps':
      return convertGps(input);
    case 'integer':
    case 'occupancy':
      return convertInteger(dataType, input);
    case 'number':
    case 'temperature':
    case 'humidity':
    case 'illuminance':
    case 'millivolts':
    case 'co2':
      return convertNumber(dataType, input);
  }
}

/**
 * A number that convertValue would accept for `dataType` as it is (the common case of a parser
 * returning a number for a numeric data point), else undefined: the caller then asks convertValue.
 * The worker's hot path, without convertValue's result object per value.
 */
export function acceptedNumber(dataType: DataType, input: number): number | undefined {
  if (!Number.isFinite(input) || !NUMERIC_DATA_TYPES.has(dataType)) return undefined;
  const range = RANGES[dataType];
  if (range && (input < range.min || (range.max !== undefined && input > range.max))) return undefined;
  if (dataType !== 'integer' && dataType !== 'occupancy') return input;
  return Number.isSafeInteger(input) ? input + 0 : undefined; // + 0 turns -0 into 0
}

function convertString(input: unknown): Conversion {
  // Half of a UTF-16 surrogate pair has no UTF-8 form: Redis's script JSON decoder refuses it and
  // InfluxDB would store it mangled, so it becomes U+FFFD here, where every copy of the value starts.
  if (typeof input === 'string')
    return { ok: true, value: input.isWellFormed() ? input : input.toWellFormed() };
  if (typeof input === 'number' && Number.isFinite(input)) return { ok: true, value: String(input) };
  if (typeof input === 'boolean') return { ok: true, value: String(input) };
  return fail('a string', input);
}

const TRUE_WORDS = new Set(['true', 'on', '1']);
const FALSE_WORDS = new Set(['false', 'off', '0']);

function convertBoolean(input: unknown): Conversion {
  if (typeof input === 'boolean') return { ok: true, value: input };
  if (input === 1 || input === 0) return { ok: true, value: input === 1 };
  if (typeof input === 'string') {
    const word = input.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return { ok: true, value: true };
    if (FALSE_WORDS.has(word)) return { ok: true, value: false };
  }
  return fail('true/false, 1/0 or on/off', input);
}

function convertNumber(dataType: DataType, input: unknown): Conversion {
  const n = toFiniteNumber(input);
  if (n === null) return fail('a number', input);
  return inRange(dataType, n, input);
}

function convertInteger(dataType: DataType, input: unknown): Conversion {
  // Occupancy counts people or a presence flag, so a boolean is a count of 0 or 1.
  const n = dataType === 'occupancy' && typeof input === 'boolean' ? Number(input) : toFiniteNumber(input);
  if (n === null) return fail(dataType === 'occupancy' ? 'a whole number ≥ 0' : 'an integer', input);
  // The range is checked before rounding so that -0.4 is refused as negative, not kept as 0.
  const checked = inRange(dataType, n, input);
  if (!checked.ok) return checked;
  const rounded = Math.round(n) + 0; // + 0 turns -0 into 0
  if (!Number.isSafeInteger(rounded)) return fail('an integer within ±9007199254740991', input);
  return { ok: true, value: rounded };
}

function inRange(dataType: DataType, n: number, input: unknown): Conversion {
  const range = RANGES[dataType];
  if (!range) return { ok: true, value: n };
  const { min, max } = range;
  if (n < min || (max !== undefined && n > max)) {
    return fail(max === undefined ? `a number ≥ ${min}` : `a number between ${min} and ${max}`, input);
  }
  return { ok: true, value: n };
}

function convertGps(input: unknown): Conversion {
  const expected = 'a position {lat, lon}, [lat, lon] or "lat,lon"';
  let pair: [unknown, unknown] | null = null;
  if (Array.isArray(input)) {
    if (input.length === 2) pair = [input[0], input[1]];
  } else if (typeof input === 'string') {
    const parts = input.split(',');
    if (parts.length === 2) pair = [parts[0], parts[1]];
  } else if (typeof input === 'object' && input !== null) {
    const o = input as Record<string, unknown>;
    pair = [o.lat, o.lon];
  }
  if (!pair) return fail(expected, input);
  const lat = toFiniteNumber(pair[0]);
  const lon = toFiniteNumber(pair[1]);
  if (lat === null || lon === null) return fail(expected, input);
  if (lat < -90 || lat > 90) return fail('a latitude between -90 and 90', lat);
  if (lon < -180 || lon > 180) return fail('a longitude between -180 and 180', lon);
  const value: GpsValue = { lat: lat + 0, lon: lon + 0 };
  return { ok: true, value };
}

/** Decimal notation only: no hex, no empty string (Number('') is 0), no "Infinity". */
const NUMERIC_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function toFiniteNumber(input: unknown): number | null {
  if (typeof input === 'number') return Number.isFinite(input) ? input : null;
  if (typeof input === 'string') {
    const text = input.trim();
    if (!NUMERIC_TEXT.test(text)) return null;
    const n = Number(text);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

function fail(expected: string, got: unknown): Conversion {
  return { ok: false, reason: `expected ${expected}, got ${describe(got)}` };
}

/** A short rendering of a rejected value for log messages. */
function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

const formatters = new Map<string, Intl.NumberFormat>();

/** Cached: formatting runs once per stored value. */
function numberFormat(locale: Locale, decimals: number): Intl.NumberFormat {
  const key = `${locale}/${decimals}`;
  let format = formatters.get(key);
  if (!format) {
    format = new Intl.NumberFormat(locale, {
      minimumFractionDigits: decimals,
      maximumFractionDigits: decimals,
      useGrouping: false,
      // No "-0.0" for a value that rounds to zero.
      signDisplay: 'negative',
    });
    formatters.set(key, format);
  }
  return format;
}

/**
 * A number in the locale without grouping: with `decimals` fixed (rounded half away from zero
 * on the shortest decimal form, so 0.15 → 0.2), or as is when `decimals` is null.
 */
export function formatNumber(n: number, locale: Locale, decimals: number | null): string {
  return formatNumberText(n, String(n), locale, decimals);
}

/** formatNumber for a caller that already has `text` = String(n) (the worker needs it thrice). */
export function formatNumberText(n: number, text: string, locale: Locale, decimals: number | null): string {
  if (decimals !== null) {
    // The same text as Intl.NumberFormat (a test compares them), without its cost (~1.5 µs a call,
    // and every stored value is formatted once).
    const fixed = fixedDecimalsOf(n, text, decimals);
    if (fixed === undefined) return numberFormat(locale, decimals).format(n);
    return locale === 'nl' ? fixed.replace('.', ',') : fixed;
  }
  return locale === 'nl' ? text.replace('.', ',') : text;
}

/**
 * `n` with `decimals` fraction digits in the en form, rounded half away from zero on its shortest
 * decimal form, no sign on a zero; undefined where that form has an exponent (or is not finite).
 */
export function fixedDecimals(n: number, decimals: number): string | undefined {
  return fixedDecimalsOf(n, String(n), decimals);
}

function fixedDecimalsOf(n: number, shortest: string, decimals: number): string | undefined {
  if (!Number.isFinite(n) || shortest.includes('e')) return undefined;
  const negative = shortest.startsWith('-');
  const abs = negative ? shortest.slice(1) : shortest;
  const dot = abs.indexOf('.');
  const whole = dot < 0 ? abs : abs.slice(0, dot);
  const fraction = dot < 0 ? '' : abs.slice(dot + 1);
  let digits = whole + fraction.slice(0, decimals).padEnd(decimals, '0');
  // '5' or more in the first dropped place: the dropped part is at least half, so away from zero.
  if (fraction.length > decimals && fraction.charCodeAt(decimals) >= 53) digits = incremented(digits);
  const split = digits.length - decimals;
  const text = decimals === 0 ? digits : `${digits.slice(0, split)}.${digits.slice(split)}`;
  return negative && /[1-9]/.test(digits) ? `-${text}` : text;
}

/** A string of decimal digits plus one ('199' → '200', '99' → '100'). */
function incremented(digits: string): string {
  let i = digits.length - 1;
  while (i >= 0 && digits[i] === '9') i--;
  if (i < 0) return `1${'0'.repeat(digits.length)}`;
  return (
    digits.slice(0, i) + String.fromCharCode(digits.charCodeAt(i) + 1) + '0'.repeat(digits.length - i - 1)
  );
}

/**
 * currentValue: the converted value in the environment's locale plus the units ('19.2 °C',
 * nl '19,2 °C'). GPS shows 5 decimals, 'lat, lon' in en and 'lat; lon' in nl (where the comma
 * is the decimal separator). Booleans show 'true' / 'false' in every locale.
 */
export function formatValue(dataType: DataType, value: DataValue, locale: Locale): string {
  const info = DATA_TYPE_INFO[dataType];
  if (typeof value === 'number') return formatNumber(value, locale, info.decimals) + info.units;
  if (typeof value === 'boolean' || typeof value === 'string') return String(value);
  const decimals = DATA_TYPE_INFO.gps.decimals;
  const separator = locale === 'nl' ? '; ' : ', ';
  return formatNumber(value.lat, locale, decimals) + separator + formatNumber(value.lon, locale, decimals);
}

/** The number history buckets aggregate: booleans count 0/1; strings and GPS positions give null. */
export function numericValue(dataType: DataType, value: DataValue): number | null {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' && dataType !== 'string') return value;
  return null;
}
