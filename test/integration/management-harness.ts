/**
 * What the management API's tests start from: the api harness's Redis and InfluxDB with two seeded
 * environments (`acme`, `other`), a Vigil of `roles` that `startVigil` runs, and tokens of each
 * scope: an admin's, an operator's (read,write) and a reader's of `acme`, an admin's of `other`.
 */
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import type { Config } from '../../src/config/schema.ts';
import { call, startApiHarness, type ApiHarness, type CallResult } from './api-harness.ts';

export const ADMIN_SCOPES = ['read', 'write', 'admin'] as const;

export interface ManagementHarness {
  h: ApiHarness;
  /** Base addresses of the roles started (those not started are ''). */
  api: string;
  gateway: string;
  mqtt: string;
  /** The API keys of `acme` and `other`. */
  apiKey: string;
  otherApiKey: string;
  tokens: { admin: string; operator: string; reader: string; otherAdmin: string };
  /** POSTs `body` as JSON to `path` with `token`. */
  post(path: string, token: string, body: unknown): Promise<CallResult>;
  /** The newest audit entries of `acme` (or `other`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  audit(env?: 'acme' | 'other'): Promise<any[]>;
  /** Stops the Vigil and the harness; for a suite's beforeAll to return. */
  close(): Promise<void>;
}

export async function startManagementHarness(
  overrides: Partial<Record<keyof Config, string | number | boolean>> = {},
): Promise<ManagementHarness> {
  const cleanups: (() => unknown)[] = [];
  const h = await startApiHarness({ roles: 'api', ...overrides }, (fn) => cleanups.push(fn));
  const { apiKey } = await h.seedEnvironment('acme');
  const { apiKey: otherApiKey } = await h.seedEnvironment('other');
  const token = async (env: string, name: string, scopes: readonly ('read' | 'write' | 'admin')[]) =>
    (await h.admin.createToken(env, name, 0, [...scopes])).token;
  const tokens = {
    admin: await token('acme', 'automation', ADMIN_SCOPES),
    operator: await token('acme', 'ops', ['read', 'write']),
    reader: await token('acme', 'reader', ['read']),
    otherAdmin: await token('other', 'automation', ADMIN_SCOPES),
  };
  const vigil = await startVigil(h.config, createLogger('silent'));
  cleanups.push(() => vigil.close());
  const base = (port: number) => (port ? `http://127.0.0.1:${port}` : '');
  const post = (path: string, t: string, body: unknown) =>
    call(base(vigil.ports.api), path, { token: t, body, contentType: 'application/json' });
  return {
    h,
    api: base(vigil.ports.api),
    gateway: base(vigil.ports.gateway),
    mqtt: vigil.ports.mqtt ? `mqtt://127.0.0.1:${vigil.ports.mqtt}` : '',
    apiKey,
    otherApiKey,
    tokens,
    post,
    async audit(env = 'acme') {
      const r = await post('/audit/list', env === 'acme' ? tokens.admin : tokens.otherAdmin, {});
      // eslint-disable-next-line @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-member-access
      return r.json.data.entries;
    },
    async close() {
      for (const fn of cleanups.reverse()) await fn();
    },
  };
}
