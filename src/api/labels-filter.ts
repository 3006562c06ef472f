/**
 * The labels filter of the read API's listings (`/devices/list`, `/events/list`): a JSON object of
 * values by key, or `key=value;key=value` text (a query string's form); a device matches when it
 * has every one. A `devEui` is a DevEUI, which devices keep lowercase: it matches in either case.
 */
import { z } from 'zod';
import { normalDeviceLabels } from '../domain/identifiers.ts';

export function labelsFilter() {
  return z
    .preprocess(
      (v) => {
        if (typeof v !== 'string') return isTextRecord(v) ? normalDeviceLabels(v) : v;
        const out: Record<string, string> = {};
        for (const pair of v.split(';')) {
          const eq = pair.indexOf('=');
          if (eq < 1) return v;
          out[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
        return normalDeviceLabels(out);
      },
      z.record(z.string(), z.string(), { error: 'an object of label values by key, or key=value;key=value' }),
    )
    .describe('Only devices with every one of these labels, e.g. {"site":"amsterdam"} or site=amsterdam.');
}

const isTextRecord = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.values(v).every((x) => typeof x === 'string');
