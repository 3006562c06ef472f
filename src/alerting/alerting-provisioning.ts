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
 * ```
 *
 * Every string may be `${VAR}` / `${VAR:-default}`. A webhook without `secret` gets one generated
 * at its creation (reported once in the changes) and keeps it on every later run; applying the same
 * file again changes nothing.
 */
import { AppError } from '../errors/app-error.ts';
import type { AlertingProvisioning } from '../tenancy/provisioning-apply.ts';
import { expandVariables, type PlannedEnvironment } from '../tenancy/provisioning-plan.ts';
import type { AlertingAdmin } from './alerting-admin.ts';
import type { ChannelInput } from './channel-spec.ts';
import type { RouteInput } from './route-spec.ts';

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

function routeFrom(entry: unknown): RouteInput {
  if (!isMap(entry)) throw invalid('each route must be a mapping');
  return Object.fromEntries(entry) as unknown as RouteInput;
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

export function alertingProvisioning(admin: AlertingAdmin): AlertingProvisioning {
  return {
    prepare: (env, entries, vars) => inEnvironment(env, () => prepare(admin, env, entries, vars)),
  };
}

async function prepare(
  admin: AlertingAdmin,
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

  return async () => {
    const changes: string[] = [];
    for (const c of channels) {
      const { changed, secret } = await admin.putChannel(env, c);
      if (!changed) continue;
      const shown = secret === undefined ? '' : `; signing secret ${secret} (shown only this once)`;
      changes.push(`${env}: channel ${String(c.name)} (${String(c.type)})${shown}`);
    }
    for (const r of routes) {
      if (await admin.putRoute(env, r)) changes.push(`${env}: route ${String(r.name)}`);
    }
    return changes;
  };
}
