/**
 * Point layout 1, frozen: how data points were stored up to Redis data layout 2, before conditions
 * that wait (`for`, `stale`). The migration to data layout 3 (point-layout-migration.ts) and the
 * migration before it read it; the upgrade test writes it, as deployments hold it. Never change it.
 *
 * The packed state of one data point, field `<sensor>|p` of its device's state hash, as the state
 * script wrote it: a layout byte (1), then
 * eleven little-endian doubles — measurement ms, sub-ms offset, rule index, last success ms, status
 * since ms, and the current hour (hour, count, total, min, max, late flag) — then the status and the
 * rules fingerprint as zero-terminated UTF-8. NaN stands for "never" (last success, status since);
 * hour -1 for "no hour kept".
 */

/** The layout byte of these records. */
export const POINT_LAYOUT_V1 = 1;
const DOUBLES = 11;
const STRINGS_AT = 1 + DOUBLES * 8;

/** A data point's current hour: the numeric values that became current in it. */
export interface KeptHourV1 {
  /** Epoch ms / 3,600,000. */
  hour: number;
  count: number;
  total: number;
  min: number;
  max: number;
  /** A value of this hour came that did not become current (older, or a repeat). */
  late: boolean;
}

export interface PointRecordV1 {
  /** Measurement time of the current value, epoch ms. */
  updatedMs: number;
  /** Sub-ms tiebreak of `updatedMs` (ns). */
  offsetNs: number;
  /** Index of the threshold rule the status was entered through (-1 = none). */
  rule: number;
  rulesId: string;
  status: string;
  lastSuccessMs: number | null;
  statusSinceMs: number | null;
  /** Null when no hour is kept (text and GPS values). */
  hour: KeptHourV1 | null;
}

/**
 * The record, or null for a buffer of another layout or length. Callers that show state refuse a
 * record of another layout first (read-state.ts): it is not "no state".
 */
export function decodePointV1(b: Buffer): PointRecordV1 | null {
  if (b.length < STRINGS_AT + 2 || b[0] !== POINT_LAYOUT_V1) return null;
  const d = (i: number) => b.readDoubleLE(1 + i * 8);
  const statusEnd = b.indexOf(0, STRINGS_AT);
  const rulesEnd = statusEnd < 0 ? -1 : b.indexOf(0, statusEnd + 1);
  if (rulesEnd < 0) return null;
  const hour = d(5);
  return {
    updatedMs: d(0),
    offsetNs: d(1),
    rule: d(2),
    lastSuccessMs: orNull(d(3)),
    statusSinceMs: orNull(d(4)),
    hour: hour < 0 ? null : { hour, count: d(6), total: d(7), min: d(8), max: d(9), late: d(10) !== 0 },
    status: b.toString('utf8', STRINGS_AT, statusEnd),
    rulesId: b.toString('utf8', statusEnd + 1, rulesEnd),
  };
}

/** The packed bytes of `r`, exactly as the state script writes them (for seeding and tests). */
export function encodePointV1(r: PointRecordV1): Buffer {
  const status = Buffer.from(`${r.status}\0`, 'utf8');
  const rulesId = Buffer.from(`${r.rulesId}\0`, 'utf8');
  const b = Buffer.alloc(STRINGS_AT + status.length + rulesId.length);
  b[0] = POINT_LAYOUT_V1;
  const h = r.hour;
  [
    r.updatedMs,
    r.offsetNs,
    r.rule,
    r.lastSuccessMs ?? NaN,
    r.statusSinceMs ?? NaN,
    h ? h.hour : -1,
    h?.count ?? 0,
    h?.total ?? 0,
    h?.min ?? 0,
    h?.max ?? 0,
    h?.late ? 1 : 0,
  ].forEach((x, i) => b.writeDoubleLE(x, 1 + i * 8));
  status.copy(b, STRINGS_AT);
  rulesId.copy(b, STRINGS_AT + status.length);
  return b;
}

const orNull = (x: number): number | null => (Number.isNaN(x) ? null : x);
