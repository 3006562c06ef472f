/**
 * Administration of an environment's notification channels, for the `vigil channel` commands and
 * provisioning. Input is checked whole (shape, then the SSRF guard on URLs) before anything is
 * written; secrets — signing secrets, URLs, header values — are sealed before they reach Redis,
 * and a webhook's signing secret is shown once, on creation and on rotation.
 */
import type { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { AdminContext } from '../tenancy/admin-support.ts';
import type { AddressGuard } from './address-guard.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import {
  channelInput,
  generateChannelId,
  generateSigningSecret,
  type ChannelInput,
  type ChannelRecord,
  type CheckedChannelInput,
  type OpenChannel,
} from './channel-spec.ts';
import type { RouteRecord } from './route-spec.ts';
import type { SecretBox } from './secret-box.ts';
import { MASK, maskedUrl } from './url-secrets.ts';

export interface ChannelAdminDeps {
  ctx: AdminContext;
  keys: AlertingKeys;
  box: SecretBox;
  guard: AddressGuard;
  /** How long the previous signing secret stays valid after a rotation, in ms. */
  secretGraceMs: number;
}

/** A channel as listed: secrets masked. */
export interface ChannelView {
  name: string;
  type: ChannelRecord['type'];
  createdUTC: string;
  /** webhook: the URL, its user, password and query values masked; slack: that it is encrypted. */
  target: string;
  headers?: string[];
  secret?: string;
  to?: string[];
}

/** INVALID_INPUT naming the first problem of a zod result. */
export function invalidInput(what: string, error: z.ZodError): AppError {
  const issue = error.issues[0];
  const path = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  return new AppError('INVALID_INPUT', `${what}: ${path}${issue?.message ?? 'invalid'}`);
}

export async function loadChannel(
  redis: Redis,
  keys: AlertingKeys,
  env: string,
  name: string,
): Promise<ChannelRecord> {
  const json = await redis.hget(keys.channels(env), name);
  if (json === null) throw new AppError('CHANNEL_NOT_FOUND', `no channel ${JSON.stringify(name)} in ${env}`);
  return JSON.parse(json) as ChannelRecord;
}

/** The channel with its secrets decrypted, for delivery (`nowMs` decides whether the previous secret still signs). */
export function openChannel(record: ChannelRecord, box: SecretBox, nowMs: number): OpenChannel {
  const { id, name } = record;
  switch (record.type) {
    case 'webhook': {
      const secrets = [box.open(record.sealedSecret ?? '')];
      if (record.previousSecret && record.previousSecret.untilMs > nowMs)
        secrets.push(box.open(record.previousSecret.sealed));
      const headers = (record.headers ?? []).map((h): [string, string] => [h.name, box.open(h.sealedValue)]);
      const url = record.sealedUrl === undefined ? (record.url ?? '') : box.open(record.sealedUrl);
      return { type: 'webhook', id, name, url, headers, secrets };
    }
    case 'slack':
      return { type: 'slack', id, name, url: box.open(record.sealedUrl ?? '') };
    case 'email':
      return { type: 'email', id, name, to: record.to ?? [] };
  }
}

export function viewChannel(record: ChannelRecord): ChannelView {
  const base = { name: record.name, type: record.type, createdUTC: record.createdUTC };
  switch (record.type) {
    case 'webhook':
      return {
        ...base,
        target: record.shownUrl ?? maskedUrl(record.url ?? ''),
        headers: (record.headers ?? []).map((h) => `${h.name}: ${MASK}`),
        secret: `whsec_${MASK}`,
      };
    case 'slack':
      return { ...base, target: 'slack incoming webhook (URL encrypted)' };
    case 'email':
      return { ...base, target: (record.to ?? []).join(','), to: record.to ?? [] };
  }
}

/** A webhook URL as stored: sealed, and masked for listings. */
function sealedWebhookUrl(box: SecretBox, url: string): Pick<ChannelRecord, 'sealedUrl' | 'shownUrl'> {
  return { sealedUrl: box.seal(url), shownUrl: maskedUrl(url) };
}

export function createChannelAdmin(deps: ChannelAdminDeps) {
  const { ctx, keys, box, guard } = deps;
  const { redis } = ctx;

  /** Checks input whole: shape, a key to seal with, URLs past the guard. */
  async function check(input: ChannelInput): Promise<CheckedChannelInput> {
    const parsed = channelInput.safeParse(input);
    if (!parsed.success) throw invalidInput(`channel ${String(input.name)}`, parsed.error);
    if (!box.hasKey) box.seal(''); // throws SECRETS_KEY_MISSING with its explanation
    if (parsed.data.type !== 'email') {
      const result = await guard.check(parsed.data.url);
      if (!result.ok)
        throw new AppError('ADDRESS_NOT_ALLOWED', `channel ${parsed.data.name}: ${result.reason}`);
    }
    return parsed.data;
  }

  function seal(
    input: CheckedChannelInput,
    id: string,
    createdUTC: string,
    secret: string | undefined,
  ): ChannelRecord {
    const base = { id, name: input.name, type: input.type, createdUTC };
    switch (input.type) {
      case 'webhook':
        return {
          ...base,
          ...sealedWebhookUrl(box, input.url),
          headers: input.headers.map(([name, value]) => ({ name, sealedValue: box.seal(value) })),
          sealedSecret: box.seal(secret ?? generateSigningSecret()),
        };
      case 'slack':
        return { ...base, sealedUrl: box.seal(input.url) };
      case 'email':
        return { ...base, to: input.to };
    }
  }

  /** True when `existing`, opened, says what `input` says (the secret only when `input` gives one). */
  function sameAs(existing: ChannelRecord, input: CheckedChannelInput): boolean {
    if (existing.type !== input.type) return false;
    const open = openChannel(existing, box, 0);
    switch (input.type) {
      case 'webhook':
        return (
          open.type === 'webhook' &&
          open.url === input.url &&
          JSON.stringify(open.headers) === JSON.stringify(input.headers) &&
          (input.secret === undefined || open.secrets[0] === input.secret)
        );
      case 'slack':
        return open.type === 'slack' && open.url === input.url;
      case 'email':
        return JSON.stringify(existing.to) === JSON.stringify(input.to);
    }
  }

  return {
    /** Creates a channel; a webhook's signing secret is returned (shown once). */
    async createChannel(env: string, input: ChannelInput) {
      await ctx.requireEnv(env);
      const checked = await check(input);
      const secret = checked.type === 'webhook' ? (checked.secret ?? generateSigningSecret()) : undefined;
      const record = seal(checked, generateChannelId(), ctx.nowUTC(), secret);
      if (!(await redis.hsetnx(keys.channels(env), checked.name, JSON.stringify(record)))) {
        throw new AppError('ALREADY_EXISTS', `channel ${checked.name} exists already in ${env}`);
      }
      return { name: checked.name, type: checked.type, ...(secret === undefined ? {} : { secret }) };
    },

    /**
     * Provisioning's create-or-update: writes only when something differs, and never replaces a
     * webhook's secret unless the input names one. `secret` is set when one was generated.
     */
    async putChannel(env: string, input: ChannelInput): Promise<{ changed: boolean; secret?: string }> {
      const checked = await check(input);
      const json = await redis.hget(keys.channels(env), checked.name);
      const existing = json === null ? undefined : (JSON.parse(json) as ChannelRecord);
      if (existing && sameAs(existing, checked)) return { changed: false };
      const kept = existing?.type === 'webhook' && checked.type === 'webhook' ? existing : undefined;
      const generated =
        checked.type === 'webhook' && checked.secret === undefined && !kept
          ? generateSigningSecret()
          : undefined;
      const record = seal(
        checked,
        existing?.id ?? generateChannelId(),
        existing?.createdUTC ?? ctx.nowUTC(),
        checked.type === 'webhook' ? (checked.secret ?? generated) : undefined,
      );
      if (kept && checked.type === 'webhook' && checked.secret === undefined) {
        record.sealedSecret = kept.sealedSecret;
        if (kept.previousSecret) record.previousSecret = kept.previousSecret;
      }
      await redis.hset(keys.channels(env), checked.name, JSON.stringify(record));
      return { changed: true, ...(generated === undefined ? {} : { secret: generated }) };
    },

    async listChannels(env: string): Promise<ChannelView[]> {
      await ctx.requireEnv(env);
      const all = Object.values(await redis.hgetall(keys.channels(env))).map(
        (j) => JSON.parse(j) as ChannelRecord,
      );
      return all.sort((a, b) => a.name.localeCompare(b.name)).map(viewChannel);
    },

    /** Deletes a channel; IN_USE while a route sends to it. */
    async deleteChannel(env: string, name: string) {
      await ctx.requireEnv(env);
      await ctx.atomically(
        [keys.channels(env), keys.routes(env)],
        async () => {
          await loadChannel(redis, keys, env, name);
          const routes = Object.values(await redis.hgetall(keys.routes(env))).map(
            (j) => JSON.parse(j) as RouteRecord,
          );
          const users = routes.filter((r) => r.channels.includes(name)).map((r) => r.name);
          if (users.length > 0)
            throw new AppError(
              'IN_USE',
              `channel ${name} is used by route(s) ${users.join(', ')}; delete those first`,
            );
        },
        (m) => m.hdel(keys.channels(env), name),
      );
      return { env, name, deleted: true };
    },

    /** A new signing secret (shown once); the old one keeps signing for the grace period. */
    async rotateSecret(env: string, name: string) {
      await ctx.requireEnv(env);
      const record = await loadChannel(redis, keys, env, name);
      if (record.type !== 'webhook' || record.sealedSecret === undefined) {
        throw new AppError(
          'INVALID_INPUT',
          `channel ${name} is a ${record.type} channel; only webhook channels have a signing secret`,
        );
      }
      const secret = generateSigningSecret();
      const untilMs = ctx.clock() + deps.secretGraceMs;
      // A URL stored in clear by an older Vigil is sealed now that the record is written anyway.
      const { url: clearUrl, ...kept } = record;
      const rotated: ChannelRecord = {
        ...kept,
        ...(clearUrl === undefined ? {} : sealedWebhookUrl(box, clearUrl)),
        sealedSecret: box.seal(secret),
        previousSecret: { sealed: record.sealedSecret, untilMs },
      };
      await redis.hset(keys.channels(env), name, JSON.stringify(rotated));
      return { name, type: record.type, secret, previousValidUntilUTC: new Date(untilMs).toISOString() };
    },

    getChannel: (env: string, name: string) => loadChannel(redis, keys, env, name),

    /** Checks channel input as creation would (provisioning checks everything before it writes). */
    checkChannel: (input: ChannelInput) => check(input),
  };
}

export type ChannelAdmin = ReturnType<typeof createChannelAdmin>;
