/**
 * Reads a provisioning directory's `environments.yaml` into a plan (pure: no Redis, no files
 * beyond the text given). Secrets may be written literally or as `${VAR}` / `${VAR:-default}`
 * references to environment variables, so a demo key can be stable while a real one stays out of
 * the repository. See docs/cli.md for the layout.
 */
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { deviceLabelsProblem, displayNameProblem } from '../domain/identifiers.ts';
import type { Locale } from '../domain/types.ts';
import { nameProblem } from './names.ts';
import { SCOPES, USER_ROLES, type Scope, type UserRole } from './types.ts';

export const PROVISIONING_FILE = 'environments.yaml';

export interface PlannedDevice {
  name: string;
  displayName?: string;
  definition: string;
  publicDefinition: boolean;
  availabilityMinutes?: number;
  /** Labels by key; absent: the device's stay as they are. */
  labels?: Record<string, string>;
  /** Sensor → rule list or {rules, hysteresis}, validated against the definition when applied. */
  thresholds: ReadonlyMap<string, unknown>;
}

export interface PlannedEnvironment {
  name: string;
  locale: Locale;
  /** Definition YAML files (relative to the directory), private to this environment. */
  definitions: string[];
  preparser?: { file: string; enabled: boolean };
  apiKeys: { name: string; key: string }[];
  tokens: { name: string; token: string; expiresMs: number; scopes: Scope[] }[];
  users: { username: string; password: string; role: UserRole }[];
  devices: PlannedDevice[];
  /** Notification channels and routes, as the file has them: alerting checks and writes them. */
  alerting: { channels: unknown[]; routes: unknown[] };
}

export interface ProvisioningPlan {
  /** Definition YAML files applied as public definitions. */
  publicDefinitions: string[];
  environments: PlannedEnvironment[];
}

const name = (kind: 'environment' | 'device' | 'definition' | 'key name' | 'username') =>
  z.string().superRefine((v, ctx) => {
    const problem = nameProblem(kind, v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const device = z
  .object({
    name: name('device'),
    displayName: z
      .string()
      .superRefine((v, ctx) => {
        const problem = displayNameProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    definition: name('definition'),
    publicDefinition: z.boolean().default(false),
    availabilityMinutes: z.number().positive().optional(),
    labels: z
      .record(z.string(), z.union([z.string(), z.number()]).transform(String))
      .superRefine((v, ctx) => {
        const problem = deviceLabelsProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    // Not z.record, which leaves out a data point named `__proto__`: the mapping as YAML read it.
    thresholds: z
      .custom<Record<string, unknown>>(
        (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
        'must map data point names to rules',
      )
      .optional()
      .transform((v) => new Map(Object.entries(v ?? {}))),
  })
  .strict();

const environment = z
  .object({
    name: name('environment'),
    locale: z.enum(['en', 'nl']).default('en'),
    definitions: z.array(z.string().min(1)).default([]),
    preparser: z
      .object({ file: z.string().min(1), enabled: z.boolean().default(false) })
      .strict()
      .optional(),
    apiKeys: z.array(z.object({ name: name('key name'), key: z.string() }).strict()).default([]),
    tokens: z
      .array(
        z
          .object({
            name: name('key name'),
            token: z.string(),
            expires: z.string().default('never'),
            // A token that writes reads too; absent: read.
            scopes: z
              .array(z.enum(SCOPES))
              .refine((s) => s.includes('read'), 'must include read (read, or read and write)')
              .default(['read'])
              .transform((s) => SCOPES.filter((x) => s.includes(x))),
          })
          .strict(),
      )
      .default([]),
    users: z
      .array(
        z
          .object({
            username: name('username'),
            password: z.string(),
            role: z.enum(USER_ROLES).default('operator'),
          })
          .strict(),
      )
      .default([]),
    devices: z.array(device).default([]),
    channels: z.array(z.unknown()).default([]),
    routes: z.array(z.unknown()).default([]),
  })
  .strict();

const file = z
  .object({
    publicDefinitions: z.array(z.string().min(1)).default([]),
    environments: z.array(environment).default([]),
  })
  .strict();

/** Replaces `${VAR}` and `${VAR:-default}`; an unset variable without a default is an error. */
export function expandVariables(text: string, vars: Record<string, string | undefined>): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_m, v: string, def: string | undefined) => {
      const value = vars[v];
      if (value !== undefined && value !== '') return value;
      if (def !== undefined) return def;
      throw new Error(`environment variable ${v} is not set (referenced as \${${v}})`);
    },
  );
}

function parseExpiry(value: string, where: string): number {
  if (value === 'never') return 0;
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms))
    throw new Error(
      `${where}: expires must be never or an ISO 8601 time (durations would change on every run)`,
    );
  return ms;
}

/** Parses the text of `environments.yaml`; throws an Error with a one-line reason. */
export function parseProvisioningFile(
  text: string,
  vars: Record<string, string | undefined>,
): ProvisioningPlan {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const { line, col } = lines.linePos(yamlError.pos[0]);
    const message = yamlError.message.split('\n')[0] ?? '';
    throw new Error(`${PROVISIONING_FILE}:${line}:${col}: YAML syntax error: ${message}`);
  }
  const parsed = file.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${PROVISIONING_FILE}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  const seen = new Set<string>();
  const environments = parsed.data.environments.map((e, i): PlannedEnvironment => {
    const where = `${PROVISIONING_FILE}: environments.${i}`;
    if (seen.has(e.name)) throw new Error(`${where}: environment ${e.name} is listed twice`);
    seen.add(e.name);
    const expand = (s: string, what: string) => {
      try {
        return expandVariables(s, vars);
      } catch (err) {
        throw new Error(`${where}: ${what}: ${(err as Error).message}`, { cause: err });
      }
    };
    return {
      name: e.name,
      locale: e.locale,
      definitions: e.definitions,
      ...(e.preparser ? { preparser: e.preparser } : {}),
      apiKeys: e.apiKeys.map((k) => ({ name: k.name, key: expand(k.key, `apiKeys ${k.name}`) })),
      tokens: e.tokens.map((t) => ({
        name: t.name,
        token: expand(t.token, `tokens ${t.name}`),
        expiresMs: parseExpiry(t.expires, `${where}: tokens ${t.name}`),
        scopes: t.scopes,
      })),
      users: e.users.map((u) => ({
        username: u.username,
        password: expand(u.password, `users ${u.username}`),
        role: u.role,
      })),
      devices: e.devices.map(planDevice),
      alerting: { channels: e.channels, routes: e.routes },
    };
  });
  return { publicDefinitions: parsed.data.publicDefinitions, environments };
}

function planDevice(d: z.output<typeof device>): PlannedDevice {
  return {
    name: d.name,
    definition: d.definition,
    publicDefinition: d.publicDefinition,
    ...(d.displayName === undefined ? {} : { displayName: d.displayName }),
    ...(d.availabilityMinutes === undefined ? {} : { availabilityMinutes: d.availabilityMinutes }),
    ...(d.labels === undefined ? {} : { labels: d.labels }),
    thresholds: d.thresholds,
  };
}
