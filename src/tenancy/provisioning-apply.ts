/**
 * `vigil provision apply <dir>`: brings Redis in line with a provisioning directory. Everything is
 * read and validated first (YAML, definitions and their parsers, devices against their
 * definitions, thresholds against data points, key formats); only then are the changes written, each
 * operation writing only when something differs. Applying the same directory twice reports zero
 * changes the second time. Provisioning adds and updates; it never deletes what the files omit.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DefinitionSpec } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { messageOf } from '../lib/message-of.ts';
import type { DefinitionScope } from './tenancy-keys.ts';
import { parseThresholdSet } from '../domain/thresholds.ts';
import { devEuiTaken, toThresholdInput } from './admin-devices.ts';
import { DEV_EUI_LABEL, normalDevEui } from '../domain/identifiers.ts';
import {
  API_KEY_FORMAT,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  TOKEN_FORMAT,
} from './admin-credentials.ts';
import {
  parseProvisioningFile,
  PROVISIONING_FILE,
  type PlannedEnvironment,
  type ProvisioningPlan,
} from './provisioning-plan.ts';
import type { TenancyAdmin } from './tenancy-admin.ts';
import type { TenancyStore } from './tenancy-store.ts';

export interface LoadedDefinition {
  spec: DefinitionSpec;
  parserSource: string;
}

export interface ProvisioningDeps {
  admin: TenancyAdmin;
  store: TenancyStore;
  /** Reads and validates a definition YAML and its parser; throws AppError INVALID_INPUT. */
  loadDefinition(path: string): Promise<LoadedDefinition>;
  /** Reads and syntax-checks a pre-parser file; throws AppError INVALID_INPUT. */
  loadPreparser(path: string): Promise<string>;
  /** Channels and routes of the files; without it, files that have some are refused. */
  alerting?: AlertingProvisioning;
}

/**
 * The alerting part of an environment's provisioning (channels and routes), which the tenancy
 * only passes through: `prepare` checks one environment's entries (`${VAR}` references expanded
 * with `vars`) before anything is written and returns what writes them, resolving with one line
 * per change.
 */
export interface AlertingProvisioning {
  prepare(
    env: string,
    entries: PlannedEnvironment['alerting'],
    vars: Record<string, string | undefined>,
  ): Promise<() => Promise<string[]>>;
}

interface Loaded {
  plan: ProvisioningPlan;
  publicDefs: LoadedDefinition[];
  privateDefs: Map<string, LoadedDefinition[]>;
  preparsers: Map<string, string>;
  /** Writers of each environment's channels and routes. */
  alerting: Map<string, () => Promise<string[]>>;
}

const invalid = (message: string) => new AppError('INVALID_INPUT', message);

/** Applies `dir`; resolves with one line per change made (empty when nothing changed). */
export async function applyProvisioning(
  dir: string,
  deps: ProvisioningDeps,
  vars: Record<string, string | undefined>,
): Promise<string[]> {
  const loaded = await loadAndValidate(dir, deps, vars);
  return write(loaded, deps);
}

async function loadAndValidate(
  dir: string,
  deps: ProvisioningDeps,
  vars: Record<string, string | undefined>,
): Promise<Loaded> {
  let text: string;
  try {
    text = await readFile(join(dir, PROVISIONING_FILE), 'utf8');
  } catch (err) {
    throw invalid(`${join(dir, PROVISIONING_FILE)} cannot be read (${messageOf(err)})`);
  }
  let plan: ProvisioningPlan;
  try {
    plan = parseProvisioningFile(text, vars);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  const loadAll = async (files: string[]) => {
    const defs: LoadedDefinition[] = [];
    for (const f of files) defs.push(await deps.loadDefinition(join(dir, f)));
    const names = defs.map((d) => d.spec.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) throw invalid(`definition ${dup} is listed twice in one scope`);
    return defs;
  };
  const loaded: Loaded = {
    plan,
    publicDefs: await loadAll(plan.publicDefinitions),
    privateDefs: new Map(),
    preparsers: new Map(),
    alerting: new Map(),
  };
  for (const env of plan.environments) {
    loaded.privateDefs.set(env.name, await loadAll(env.definitions));
    if (env.preparser)
      loaded.preparsers.set(env.name, await deps.loadPreparser(join(dir, env.preparser.file)));
    checkSecrets(env);
    await checkSecretOwners(env, deps);
    for (const device of env.devices) await checkDevice(env.name, device, loaded, deps);
    await checkDevEuis(env, deps);
    const { channels, routes } = env.alerting;
    if (channels.length > 0 || routes.length > 0) {
      if (!deps.alerting) throw invalid(`${env.name}: channels and routes cannot be applied here`);
      loaded.alerting.set(env.name, await deps.alerting.prepare(env.name, env.alerting, vars));
    }
  }
  checkUnique(plan);
  return loaded;
}

/** Names unique within their environment, and no secret listed twice anywhere. */
function checkUnique(plan: ProvisioningPlan) {
  const firstDuplicate = (values: string[]) => values.find((v, i) => values.indexOf(v) !== i);
  for (const env of plan.environments) {
    const lists: [string, string[]][] = [
      ['device', env.devices.map((d) => d.name)],
      ['API key', env.apiKeys.map((k) => k.name)],
      ['token', env.tokens.map((t) => t.name)],
      ['user', env.users.map((u) => u.username)],
    ];
    for (const [what, names] of lists) {
      const dup = firstDuplicate(names);
      if (dup !== undefined) throw invalid(`${env.name}: ${what} ${dup} is listed twice`);
    }
  }
  const secrets = plan.environments.flatMap((e) => [
    ...e.apiKeys.map((k) => k.key),
    ...e.tokens.map((t) => t.token),
  ]);
  if (firstDuplicate(secrets) !== undefined)
    throw invalid('the same API key or token secret is listed twice');
}

/**
 * Each DevEUI of the environment's devices on one device only: of the files, and of Redis, where
 * another device holding one would refuse its device's write half-way.
 */
async function checkDevEuis(env: PlannedEnvironment, deps: ProvisioningDeps) {
  const devices = env.devices.flatMap((d) => {
    const eui = normalDevEui(d.labels?.[DEV_EUI_LABEL]);
    return eui === null ? [] : [{ name: d.name, eui }];
  });
  const seen = new Map<string, string>();
  for (const { name, eui } of devices) {
    const other = seen.get(eui);
    if (other !== undefined && other !== name) throw devEuiTaken(eui, other);
    seen.set(eui, name);
  }
  const owners = await deps.store.devEuiOwners(
    env.name,
    devices.map((d) => d.eui),
  );
  devices.forEach(({ name, eui }, i) => {
    const holder = owners[i];
    if (holder !== null && holder !== undefined && holder !== name) throw devEuiTaken(eui, holder);
  });
}

/** A secret already registered under another name or environment would be refused half-way. */
async function checkSecretOwners(env: ProvisioningPlan['environments'][number], deps: ProvisioningDeps) {
  for (const k of env.apiKeys) {
    const owner = await deps.store.resolveApiKey(k.key);
    if (owner && (owner.env !== env.name || owner.name !== k.name)) {
      throw invalid(`${env.name}: API key ${k.name} is already registered under another name or environment`);
    }
  }
  for (const t of env.tokens) {
    const owner = await deps.store.resolveToken(t.token, Date.now());
    if (owner && (owner.env !== env.name || owner.subject !== t.name)) {
      throw invalid(`${env.name}: token ${t.name} is already registered under another name or environment`);
    }
  }
}

function checkSecrets(env: ProvisioningPlan['environments'][number]) {
  for (const k of env.apiKeys) {
    if (!API_KEY_FORMAT.test(k.key))
      throw invalid(`${env.name}: API key ${k.name}: expected vk_ and at least 20 base64url characters`);
  }
  for (const t of env.tokens) {
    if (!TOKEN_FORMAT.test(t.token))
      throw invalid(`${env.name}: token ${t.name}: expected vt_ and at least 20 base64url characters`);
  }
  for (const u of env.users) {
    if (u.password.length < MIN_PASSWORD_LENGTH || u.password.length > MAX_PASSWORD_LENGTH) {
      throw invalid(
        `${env.name}: user ${u.username}: password must have ${MIN_PASSWORD_LENGTH}-${MAX_PASSWORD_LENGTH} characters`,
      );
    }
  }
}

async function checkDevice(
  env: string,
  device: ProvisioningPlan['environments'][number]['devices'][number],
  loaded: Loaded,
  deps: ProvisioningDeps,
) {
  const fromFiles = (device.publicDefinition ? loaded.publicDefs : (loaded.privateDefs.get(env) ?? [])).find(
    (d) => d.spec.name === device.definition,
  );
  const spec =
    fromFiles?.spec ??
    (await deps.store.getDefinition(env, device.definition, device.publicDefinition))?.spec;
  if (!spec) {
    throw invalid(
      `${env}: device ${device.name}: no ${device.publicDefinition ? 'public' : 'private'} definition ${device.definition} in the files or in Redis`,
    );
  }
  for (const [sensor, input] of device.thresholds) {
    const point = spec.dataPoints.find((p) => p.name === sensor);
    if (!point)
      throw invalid(`${env}: device ${device.name}: definition ${spec.name} has no data point ${sensor}`);
    try {
      parseThresholdSet(toThresholdInput(input), point.dataType);
    } catch (err) {
      throw invalid(`${env}: device ${device.name}: ${sensor}: ${(err as Error).message}`);
    }
  }
}

async function write(loaded: Loaded, { admin }: ProvisioningDeps): Promise<string[]> {
  const changes: string[] = [];
  const note = (changed: boolean, what: string) => {
    if (changed) changes.push(what);
  };
  const applyDefs = async (scope: DefinitionScope, defs: LoadedDefinition[], label: string) => {
    for (const d of defs) {
      const r = await admin.applyDefinition(scope, d.spec, d.parserSource, {
        author: { actor: 'provisioning', note: 'vigil provision apply' },
      });
      note(r.changed, `definition ${d.spec.name} (${label}) → version ${r.published}`);
    }
  };
  for (const env of loaded.plan.environments) {
    note(
      await admin.ensureEnvironment(env.name, env.locale),
      `environment ${env.name} (locale ${env.locale})`,
    );
  }
  await applyDefs({ kind: 'public' }, loaded.publicDefs, 'public');
  for (const env of loaded.plan.environments) {
    await applyDefs({ kind: 'private', env: env.name }, loaded.privateDefs.get(env.name) ?? [], env.name);
    const source = loaded.preparsers.get(env.name);
    if (env.preparser && source !== undefined) {
      const r = await admin.setPreparser(env.name, source, env.preparser.enabled);
      note(
        r.changed,
        `${env.name}: pre-parser revision ${r.revision} (${r.enabled ? 'enabled' : 'disabled'})`,
      );
    }
    for (const d of env.devices) {
      const changed = await admin.putDevice(env.name, {
        name: d.name,
        definitionName: d.definition,
        definitionIsPublic: d.publicDefinition,
        ...(d.displayName === undefined ? {} : { displayName: d.displayName }),
        ...(d.availabilityMinutes === undefined ? {} : { availabilityMinutes: d.availabilityMinutes }),
        ...(d.labels === undefined ? {} : { labels: d.labels }),
      });
      note(changed, `${env.name}: device ${d.name}`);
      for (const [sensor, set] of d.thresholds) {
        note(
          await admin.setThreshold(env.name, d.name, sensor, set),
          `${env.name}: thresholds of ${d.name}/${sensor}`,
        );
      }
    }
    for (const k of env.apiKeys)
      note(await admin.putApiKey(env.name, k.name, k.key), `${env.name}: API key ${k.name}`);
    for (const t of env.tokens) {
      note(
        await admin.putToken(env.name, t.name, t.token, t.expiresMs, t.scopes),
        `${env.name}: token ${t.name}`,
      );
    }
    for (const u of env.users)
      note(await admin.putUser(env.name, u.username, u.password, u.role), `${env.name}: user ${u.username}`);
    changes.push(...((await loaded.alerting.get(env.name)?.()) ?? []));
    // Devices, their settings and the pre-parser reach the workers from their next step on.
    if (changes.length > 0) await admin.catalogChanged(env.name);
  }
  return changes;
}
