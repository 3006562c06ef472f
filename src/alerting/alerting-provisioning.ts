/**
 * Channels and routes in a provisioning file (`environments.yaml`, per environment):
 *
 * ```yaml
 * channels:
 *   - { name: ops-hook, type: webhook, url: 'https://example.com/vigil', headers: { Authorization: '${HOOK_TOKEN}' } }
 *   - { name: team-chat, type: slack, url: '${SLACK_URL}' }
 *   - { name: on-call, type: email, to: [ops@example.com] }
 * routes:
 *   - { name: warnings, channels: [ops-hook], minStatus: WARNING, includeSuccess: true }
 *   - { name: amsterdam, channels: [on-call], labels: { site: amsterdam } }
 * ```
 *
 * Every string may be `${VAR}` / `${VAR:-default}`. A webhook without `secret` gets one generated
 * at its creation (reported once in the changes) and keeps it on every later run; applying the same
 * file again changes nothing. Each channel or route written is recorded in the environment's audit
 * log (`channel.provision`, `route.provision`, with the record before and after, secrets masked).
 */
import type { AuditAction, AuditLog } from '../audit/audit-log.ts';
import { AppError } from '../errors/app-error.ts';
import type { AlertingProvisioning } from '../tenancy/provisioning-apply.ts';
import { expandVariables, type PlannedEnvironment } from '../tenancy/provisioning-plan.ts';
import type { AlertingAdmin } from './alerting-admin.ts';
import { viewChannel } from './channel-admin.ts';
import type { ChannelInput } from './channel-spec.ts';
import type { RouteInput } from './route-spec.ts';

/** Where provisioning records what it changed, and as whom (`cli:<OS user>`). */
export interface ProvisioningAudit {
  log: Pick<AuditLog, 'record'>;
  actor: string;
}

const invalid = (message: string) => new AppError('INVALID_INPUT', message);

/** Expands `${VAR}` in every string of a YAML value. */
function expandAll(value: unknown, vars: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') return expandVariables(value, vars);
  if (Array.isArray(value)) return value.map((v) => expandAll(v, vars));
  if (typeof value === 'object' && value !== null) {
    return new Map(Object.entries(value).map(([k, v]) => [k, expandAll(v, vars)]));
  }
  return value;
}

const isMap = (v: unknown): v is Map<string, unknown> => v instanceof Map;

/** A channel entry of the file as CLI-shaped input: `headers` as a mapping, `to` as a list or one address. */
function channelFrom(entry: unknown): ChannelInput {
  if (!isMap(entry)) throw invalid('each channel must be a mapping');
  const fields = Object.fromEntries(entry) as Record<string, unknown>;
  const { headers, to } = fields;
  if (headers !== undefined) {
    if (!isMap(headers)) throw invalid(`channel ${String(fields.name)}: headers must map names to values`);
    fields.headers = [...headers];
  }
  if (typeof to === 'string') fields.to = to.split(',').map((a) => a.trim());
  return fields as unknown as ChannelInput;
}

/** A route entry of the file as input: `labels` as a mapping of key to value. */
function routeFrom(entry: unknown): RouteInput {
  if (!isMap(entry)) throw invalid('each route must be a mapping');
  const fields = Object.fromEntries(entry) as Record<string, unknown>;
  const { labels } = fields;
  if (labels !== undefined) {
    if (!isMap(labels)) throw invalid(`route ${String(fields.name)}: labels must map keys to values`);
    fields.labels = Object.fromEntries(labels);
  }
  return fields as unknown as RouteInput;
}

function firstDuplicate(names: string[]): string | undefined {
  return names.find((n, i) => names.indexOf(n) !== i);
}

/** Names the environment in a refusal, as the rest of provisioning does. */
async function inEnvironment<T>(env: string, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof AppError) throw new AppError(err.code, `${env}: ${err.message}`, { cause: err });
    throw err;
  }
}

export function alertingProvisioning(admin: AlertingAdmin, audit: ProvisioningAudit): AlertingProvisioning {
  return {
    prepare: (env, entries, vars) => inEnvironment(env, () => prepare(admin, audit, env, entries, vars)),
  };
}

/** What `read` answers, or undefined when it finds nothing (a channel or route not there yet). */
async function ifFound<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof AppError && /_NOT_FOUND$/.test(err.code)) return undefined;
    throw err;
  }
}

async function prepare(
  admin: AlertingAdmin,
  audit: ProvisioningAudit,
  env: string,
  entries: PlannedEnvironment['alerting'],
  vars: Record<string, string | undefined>,
): Promise<() => Promise<string[]>> {
  let channels: ChannelInput[];
  let routes: RouteInput[];
  try {
    channels = entries.channels.map((c) => channelFrom(expandAll(c, vars)));
    routes = entries.routes.map((r) => routeFrom(expandAll(r, vars)));
  } catch (err) {
    throw err instanceof AppError ? err : invalid((err as Error).message);
  }
  const checked = [];
  for (const c of channels) checked.push(await admin.checkChannel(c));
  const names = checked.map((c) => c.name);
  const dup = firstDuplicate(names);
  if (dup !== undefined) throw invalid(`channel ${dup} is listed twice`);
  const routeNames: string[] = [];
  for (const r of routes) routeNames.push((await admin.checkRoute(env, r, new Set(names))).name);
  const dupRoute = firstDuplicate(routeNames);
  if (dupRoute !== undefined) throw invalid(`route ${dupRoute} is listed twice`);

  const record = (action: AuditAction, target: string, before: unknown, after: unknown, details = {}) =>
    audit.log.record(env, {
      atUTC: new Date().toISOString(),
      actor: audit.actor,
      action,
      target,
      ...(before === undefined ? {} : { before }),
      after,
      details,
    });
  const channelView = async (name: string) =>
    ifFound(async () => viewChannel(await admin.getChannel(env, name)));

  return async () => {
    const changes: string[] = [];
    for (const c of channels) {
      const name = String(c.name);
      const before = await channelView(name);
      const { changed, secret } = await admin.putChannel(env, c);
      if (!changed) continue;
      await record('channel.provision', name, before, await channelView(name), { type: c.type });
      const shown = secret === undefined ? '' : `; signing secret ${secret} (shown only this once)`;
      changes.push(`${env}: channel ${name} (${String(c.type)})${shown}`);
    }
    for (const r of routes) {
      const name = String(r.name);
      const before = await ifFound(() => admin.getRoute(env, name));
      if (!(await admin.putRoute(env, r))) continue;
      await record('route.provision', name, before, await admin.getRoute(env, name));
      changes.push(`${env}: route ${name}`);
    }
    return changes;
  };
}
