/**
 * VIGIL_MQTT_BRIDGE_CHIRPSTACK: which API key receives the events of each ChirpStack application
 * the bridge takes from the external broker. ChirpStack's MQTT integration publishes to
 * `application/<applicationId>/device/<devEui>/event/<event>`, with no room for a key, so the
 * application id stands for one.
 */
import { z } from 'zod';

/** ChirpStack application id (a lowercase UUID, as ChirpStack v4 writes it in its topics) → API key. */
export type ChirpstackApplications = ReadonlyMap<string, string>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The gateway's shape of an API key (`vk_` + base64url, at most 128 characters). */
const API_KEY = /^vk_[A-Za-z0-9_-]{1,125}$/;

/**
 * The `position`th entry (1-based), or what is wrong with it. Problems name entries by position:
 * the setting is a secret, and configuration errors print no part of it.
 */
function readEntry(
  entry: string,
  position: number,
  mapped: ReadonlyMap<string, { key: string; position: number }>,
): { id: string; key: string } | { problem: string } {
  const at = entry.indexOf('=');
  if (at < 0) return { problem: `entry ${position}: expected <applicationId>=<API_KEY>` };
  const id = entry.slice(0, at).trim().toLowerCase();
  const key = entry.slice(at + 1).trim();
  if (!UUID.test(id))
    return { problem: `entry ${position}: the application id is not a UUID (ChirpStack v4's ids are)` };
  const before = mapped.get(id);
  if (before !== undefined)
    return { problem: `entry ${position}: maps the application of entry ${before.position} again` };
  if (!API_KEY.test(key))
    return { problem: `entry ${position}: the API key is not vk_ followed by base64url characters` };
  return { id, key };
}

/**
 * `<applicationId>=<API_KEY>` pairs, comma-separated (spaces around them allowed; empty = none).
 * Application ids are compared in lowercase; two applications may share a key, one application
 * has one key.
 */
export const chirpstackApplications = z.string().transform((text, ctx): ChirpstackApplications => {
  const mapped = new Map<string, { key: string; position: number }>();
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const read = readEntry(entry, i + 1, mapped);
    if ('problem' in read) {
      ctx.addIssue({ code: 'custom', message: read.problem });
      return z.NEVER;
    }
    mapped.set(read.id, { key: read.key, position: i + 1 });
  }
  return new Map([...mapped].map(([id, { key }]) => [id, key]));
});
