/**
 * An MQTT connection's identity. aedes keeps a persistent session (stored subscriptions, messages
 * queued while offline) under `client.id`, restores it for the next CONNECT with that id, and
 * closes a live connection when another one registers the same id. Left as the client sent it, a
 * client id would open any environment's session. So once the CONNECT's key is known — in the
 * authenticate hook, which aedes runs after setting `client.id` and before it looks the session
 * up or registers the client — the id becomes `<env>/<client id>`: the same client id in two
 * environments names two sessions, and neither connection closes the other. Environment names
 * never hold a `/` (ENV_NAME_PATTERN), so the environment part cannot be forged by the client id.
 */
import type { Client } from 'aedes';

export interface Session {
  /** The API key the connection gave as its password. */
  apiKey: string;
  env: string;
  /** The client id as the client sent it (what queued items record). */
  clientId: string;
  /** Keys of the subscriptions authorized on this connection (restored ones included). */
  grantedKeys: Set<string>;
}

/** The broker-side id of a client's session in `env`. */
export const sessionId = (env: string, clientId: string): string => `${env}/${clientId}`;

/** Confines `client` to `env`'s sessions; call from the authenticate hook once the key is valid. */
export function enterSession(client: Client, apiKey: string, env: string): Session {
  const clientId = client.id;
  client.id = sessionId(env, clientId);
  return { apiKey, env, clientId, grantedKeys: new Set() };
}
