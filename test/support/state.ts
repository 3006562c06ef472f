/**
 * A device's state hash as the tests look at it: device fields (`@lc`, `@lost`) as text and each
 * data point's value (`<sensor>|v`) with its packed state (`<sensor>|p`) decoded. The version of
 * the last write (`@ver`, which only tells writers apart) is left out.
 */
import type { Redis } from 'ioredis';
import { VERSION_FIELD } from '../../src/state/device-state-codec.ts';
import { decodePoint, type PointRecord } from '../../src/state/point-record.ts';

export interface StoredPoint extends Partial<PointRecord> {
  /** The value as stored (JSON text). */
  value?: string;
}

export interface StoredState {
  /** `@lc`, `@lost`, as text. */
  device: Record<string, string>;
  /** By sensor name. */
  points: Record<string, StoredPoint>;
}

export async function storedState(redis: Redis, stateKey: string): Promise<StoredState> {
  const raw = await redis.hgetallBuffer(stateKey);
  // Without prototypes: a data point may be called `__proto__` or `constructor`.
  const state: StoredState = {
    device: Object.create(null) as Record<string, string>,
    points: Object.create(null) as Record<string, StoredPoint>,
  };
  for (const [field, b] of Object.entries(raw)) {
    if (field === VERSION_FIELD) continue;
    if (field.startsWith('@')) {
      state.device[field] = b.toString();
      continue;
    }
    const at = field.lastIndexOf('|');
    const sensor = field.slice(0, at);
    const point = (state.points[sensor] ??= {});
    if (field.endsWith('|v')) point.value = b.toString();
    else if (field.endsWith('|p')) Object.assign(point, decodePoint(b) ?? {});
    else throw new Error(`unexpected state field ${field}`);
  }
  return state;
}
