/**
 * Creating the devices an API key does not know, for the worker: an uplink of a LoRaWAN network
 * server names its device by the server's device id and its DevEUI, and a key with an auto-create
 * rule (admin-api-key-rules.ts) may create it — of the rule's definition, with the rule's labels and
 * the DevEUI as its `devEui` label, at most `maxDevices` of them. Each device is created by one
 * script (lua/create-auto-device.lua) that checks everything and writes everything at once, the
 * key's count and the audit entry included (actor `apiKey:<name>`), so the cap holds under
 * concurrent workers. A device that exists already is `existing` and costs nothing, so calling
 * twice with the same input creates nothing the second time. What is kept outside the tenancy for a
 * new device (that it was never heard from) is added after its record, by a script that checks for
 * its first contact; and the environment's catalog epoch is raised, so every worker's catalog finds
 * the devices from its next refresh on (catalog.ts).
 */
import { readFileSync } from 'node:fs';
import type { AuditKeys } from '../audit/audit-keys.ts';
import { maskSecrets, withAuditAppend, type AuditRecord } from '../audit/audit-log.ts';
import { DEV_EUI_LABEL, nameProblem, normalDevEui } from '../domain/identifiers.ts';
import type { ErrorCode } from '../errors/catalogue.ts';
import type { Redis } from '../redis/connect.ts';
import { decodeDevice, encodeDevice, hasExpired } from './records.ts';
import type { DependentData, TenancyKeys } from './tenancy-keys.ts';
import { scopeOf } from './tenancy-store.ts';
import type { AutoCreateRule, DeviceRecord } from './types.ts';

const CREATE = withAuditAppend(
  readFileSync(new URL('./lua/create-auto-device.lua', import.meta.url), 'utf8'),
);

export type AutoCreateOutcome =
  | { kind: 'created' | 'existing'; device: DeviceRecord }
  | { kind: 'refused'; code: ErrorCode; message: string };

export interface AutoDevices {
  /**
   * Creates each wanted device the key `keyId` of `env` may create; one call per step and key.
   * Answers an outcome per device name: `existing` for a device of that name that exists (created
   * meanwhile, or by an earlier call), `created`, or `refused` — UNKNOWN_DEVICE (the key is
   * unknown, expired or has no rule), DEFINITION_NOT_FOUND (the rule's definition is gone),
   * DEV_EUI_TAKEN (another device has the DevEUI), AUTO_CREATE_LIMIT (the key created `maxDevices`
   * already), INVALID_INPUT (a device name or DevEUI that is not one). A name given twice gets
   * the first one's outcome.
   */
  create(
    env: string,
    keyId: string,
    wanted: readonly { deviceName: string; devEui: string }[],
  ): Promise<Map<string, AutoCreateOutcome>>;
}

export interface AutoDevicesDeps {
  redis: Redis;
  keys: TenancyKeys & AuditKeys;
  /** What the rest of Vigil keeps for a device created (src/keys.ts dependentData). */
  dependents: DependentData;
  /** How long audit entries are kept, in ms (VIGIL_AUDIT_RETENTION_DAYS): what appending trims. */
  auditRetentionMs: number;
  /** Epoch ms; Date.now by default. */
  clock?: () => number;
}

/** The key as its metadata holds it (admin-credentials.ts's CredentialMeta). */
interface KeyMeta {
  id: string;
  name: string;
  revision?: number;
  expiresUTC?: string | null;
  autoCreate?: AutoCreateRule;
}

/** What the key may do now: create with `rule`, or only find existing devices (`refusal` for the rest). */
type Permit =
  | { rule: AutoCreateRule; meta: KeyMeta }
  | { refusal: { code: ErrorCode; message: string }; meta: KeyMeta | null };

type Wanted = { deviceName: string; devEui: string };

/** Attempts of a device whose key changed its rule meanwhile ('moved'). */
const ATTEMPTS = 3;

export function createAutoDevices(deps: AutoDevicesDeps): AutoDevices {
  const { redis, keys, dependents } = deps;
  const clock = deps.clock ?? Date.now;

  async function permitOf(env: string, keyId: string): Promise<Permit> {
    const json = await redis.hget(keys.envApiKeys(env), keyId);
    const meta = json === null ? null : (JSON.parse(json) as KeyMeta);
    const unknown = (why: string) => ({ refusal: { code: 'UNKNOWN_DEVICE' as const, message: why }, meta });
    if (!meta || hasExpired(meta.expiresUTC ? Date.parse(meta.expiresUTC) : undefined, clock()))
      return unknown(`no such device, and API key ${keyId} is unknown, revoked or expired`);
    const rule = meta.autoCreate;
    if (!rule) return unknown(`no such device, and API key ${meta.name} creates no devices`);
    const scope = scopeOf(env, rule.definitionIsPublic);
    if (!(await redis.hexists(keys.definition(scope, rule.definitionName), 'spec')))
      return {
        refusal: {
          code: 'DEFINITION_NOT_FOUND',
          message: `no such device, and the definition ${rule.definitionName} of API key ${meta.name}'s auto-create rule is gone`,
        },
        meta,
      };
    return { rule, meta };
  }

  /** The script's arguments for one device (report-only without a rule). */
  function scriptArgs(env: string, permit: Permit, w: Wanted, nowMs: number): (string | number)[] {
    const keyId = permit.meta?.id ?? '';
    const common = [
      keys.envApiKeys(env),
      keys.autoCreated(env),
      keys.device(env, w.deviceName),
      keys.devEuis(env),
      keys.devices(env),
      keys.auditLog(env),
    ];
    if (!('rule' in permit)) return [6, ...common, keyId, '', w.deviceName, w.devEui, 0, 0, '', 0];
    const { rule, meta } = permit;
    const record = recordFor(env, rule, w, nowMs);
    const labels = Object.entries(record.labels);
    const entry: AuditRecord = {
      atUTC: record.createdUTC,
      actor: `apiKey:${meta.name}`,
      action: 'device.create',
      target: w.deviceName,
      after: maskSecrets(auditedDevice(record)),
      details: { autoCreated: true, apiKeyId: meta.id, devEui: w.devEui },
    };
    return [
      6 + labels.length,
      ...common,
      ...labels.map(([k]) => keys.labelIndex(env, k)),
      keyId,
      String(meta.revision ?? 1),
      w.deviceName,
      w.devEui,
      nowMs,
      Math.max(0, nowMs - deps.auditRetentionMs),
      JSON.stringify(entry),
      labels.length,
      ...labels.map(([, v]) => `${v}\n${w.deviceName}`),
      ...Object.entries(encodeDevice(record)).flat(),
    ];
  }

  /** One pass over `pending`: their outcomes, and those to try again (their key's rule moved). */
  async function attempt(env: string, keyId: string, pending: readonly Wanted[]) {
    const permit = await permitOf(env, keyId);
    const nowMs = clock();
    const pipe = redis.pipeline();
    for (const w of pending)
      pipe.eval(CREATE, ...(scriptArgs(env, permit, w, nowMs) as [number, ...string[]]));
    const replies = (await pipe.exec()) ?? [];
    const outcomes = new Map<string, AutoCreateOutcome>();
    const again: Wanted[] = [];
    pending.forEach((w, i) => {
      const [err, reply] = replies[i] ?? [new Error('no reply'), null];
      if (err) throw err;
      const [kind, ...rest] = reply as string[];
      const outcome = outcomeOf(env, w, kind ?? '', rest, permit, nowMs);
      if (outcome) outcomes.set(w.deviceName, outcome);
      else again.push(w);
    });
    return { outcomes, again };
  }

  return {
    async create(env, keyId, wanted) {
      const { valid, outcomes } = checkWanted(wanted);
      let pending = valid;
      for (let i = 0; i < ATTEMPTS && pending.length > 0; i++) {
        const pass = await attempt(env, keyId, pending);
        for (const [name, o] of pass.outcomes) outcomes.set(name, o);
        pending = pass.again;
      }
      for (const w of pending)
        outcomes.set(w.deviceName, {
          kind: 'refused',
          code: 'CONFLICT',
          message: `API key ${keyId}'s auto-create rule kept changing while ${w.deviceName} was created`,
        });
      const created = [...outcomes].filter(([, o]) => o.kind === 'created').map(([name]) => name);
      if (created.length > 0) {
        const after = redis.pipeline();
        dependents.createDevices(after, env, created);
        after.hincrby(keys.catalogEpochs(), env, 1);
        await after.exec();
      }
      return outcomes;
    },
  };
}

/** The outcome of a script's reply; undefined when the device is to be tried again. */
function outcomeOf(
  env: string,
  w: Wanted,
  kind: string,
  rest: string[],
  permit: Permit,
  nowMs: number,
): AutoCreateOutcome | undefined {
  const refused = (code: ErrorCode, message: string) => ({ kind: 'refused' as const, code, message });
  switch (kind) {
    case 'existing': {
      const hash: Record<string, string> = {};
      for (let i = 0; i + 1 < rest.length; i += 2) hash[rest[i] ?? ''] = rest[i + 1] ?? '';
      const device = decodeDevice(env, w.deviceName, hash);
      return device ? { kind: 'existing', device } : refused('UNKNOWN_DEVICE', `no device ${w.deviceName}`);
    }
    case 'created': {
      if (!('rule' in permit)) return undefined;
      return { kind: 'created', device: recordFor(env, permit.rule, w, nowMs) };
    }
    case 'off':
      return 'refusal' in permit ? refused(permit.refusal.code, permit.refusal.message) : undefined; // the rule went meanwhile: read again
    case 'moved':
      return undefined;
    case 'taken':
      return refused('DEV_EUI_TAKEN', `DevEUI ${w.devEui} is device ${rest[0] ?? ''}'s already`);
    case 'limit':
      return refused(
        'AUTO_CREATE_LIMIT',
        `API key ${permit.meta?.name ?? ''} created as many devices as its rule allows (${'rule' in permit ? permit.rule.maxDevices : 0})`,
      );
    default:
      throw new Error(`create-auto-device.lua answered ${kind}`);
  }
}

/** The wanted devices with a valid name and DevEUI (lowercase), once each; the others refused. */
function checkWanted(wanted: readonly Wanted[]): {
  valid: Wanted[];
  outcomes: Map<string, AutoCreateOutcome>;
} {
  const outcomes = new Map<string, AutoCreateOutcome>();
  const valid: Wanted[] = [];
  const seen = new Set<string>();
  for (const w of wanted) {
    if (seen.has(w.deviceName)) continue;
    seen.add(w.deviceName);
    const eui = normalDevEui(w.devEui);
    const problem =
      nameProblem('device', w.deviceName) ??
      (eui === null ? `invalid DevEUI ${JSON.stringify(w.devEui)}` : undefined);
    if (problem !== undefined || eui === null)
      outcomes.set(w.deviceName, { kind: 'refused', code: 'INVALID_INPUT', message: problem ?? '' });
    else valid.push({ deviceName: w.deviceName, devEui: eui });
  }
  return { valid, outcomes };
}

/** The device the rule makes of a wanted one (named by its name), as the script writes it. */
const recordFor = (env: string, rule: AutoCreateRule, w: Wanted, nowMs: number): DeviceRecord => ({
  env,
  deviceName: w.deviceName,
  displayName: w.deviceName,
  definitionName: rule.definitionName,
  definitionIsPublic: rule.definitionIsPublic,
  labels: { ...rule.labels, [DEV_EUI_LABEL]: w.devEui },
  revision: 1,
  createdUTC: new Date(nowMs).toISOString(),
});

/** A device as the audit log keeps it (src/management/device-shape.ts auditedDevice). */
const auditedDevice = (d: DeviceRecord) => ({
  deviceName: d.deviceName,
  displayName: d.displayName,
  definitionIsPublic: d.definitionIsPublic,
  definitionName: d.definitionName,
  labels: d.labels,
  availabilityMinutes: null,
  revision: d.revision,
  createdUTC: d.createdUTC,
});
