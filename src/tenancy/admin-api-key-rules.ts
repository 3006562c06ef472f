/**
 * API keys' auto-create rules (AutoCreateRule): what a key may create of the devices it does not
 * know. A rule is kept in the key's metadata (`Keys.envApiKeys`, CredentialMeta.autoCreate), checked
 * whole before it is stored, its definition required to exist; the devices a key created are counted
 * beside it (`Keys.autoCreated`), under its predecessor's id for a rotated key's successor, which
 * keeps the rule and the count. A key's `revision` counts the changes of its rule, so that an
 * update based on another revision is refused (CONFLICT), as every other record's is.
 */
import { AppError } from '../errors/app-error.ts';
import { DEV_EUI_LABEL, LABELS_MAX, labelsProblem } from '../domain/identifiers.ts';
import { describeScope } from './admin-definition-versions.ts';
import { checkName, invalid, type AdminContext } from './admin-support.ts';
import type { DefinitionScope } from './tenancy-keys.ts';
import { AUTO_CREATE_MAX_DEVICES, type AutoCreateRule } from './types.ts';

/** A rule as given: `definitionIsPublic` false and `labels` none when absent. */
export interface AutoCreateRuleInput {
  definitionName: string;
  definitionIsPublic?: boolean | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
  maxDevices: number;
}

/** The metadata of a key that rules need (admin-credentials.ts's CredentialMeta has it all). */
export interface RuledMeta {
  id: string;
  /** Absent on keys stored before revisions: 1. */
  revision?: number;
  autoCreate?: AutoCreateRule;
  /** Where the devices it created are counted; absent: its own id. */
  counterId?: string;
}

export const revisionOf = (m: RuledMeta): number => m.revision ?? 1;
export const counterOf = (m: RuledMeta): string => m.counterId ?? m.id;

/** The rule `input` describes; INVALID_INPUT with the first problem. */
export function checkAutoCreateRule(input: AutoCreateRuleInput): AutoCreateRule {
  checkName('definition', input.definitionName);
  const labels = { ...input.labels };
  const problem = labelsProblem(labels);
  if (problem !== undefined) throw invalid(`auto-create rule: ${problem}`);
  // Each device gets its devEui besides these.
  if (Object.keys(labels).length >= LABELS_MAX)
    throw invalid(`auto-create rule: at most ${LABELS_MAX - 1} labels (each device adds its devEui)`);
  if (Object.hasOwn(labels, DEV_EUI_LABEL))
    throw new AppError(
      'INVALID_INPUT',
      `auto-create rule: no ${DEV_EUI_LABEL} label: each device created gets its own, the uplink's`,
      { details: { label: DEV_EUI_LABEL } },
    );
  const max = input.maxDevices;
  if (!Number.isSafeInteger(max) || max < 1 || max > AUTO_CREATE_MAX_DEVICES)
    throw invalid(`auto-create rule: maxDevices must be an integer within 1..${AUTO_CREATE_MAX_DEVICES}`);
  return {
    definitionName: input.definitionName,
    definitionIsPublic: input.definitionIsPublic ?? false,
    labels,
    maxDevices: max,
  };
}

/** DEFINITION_NOT_FOUND unless the rule's definition exists for `env`. */
export async function requireRuleDefinition(ctx: AdminContext, env: string, rule: AutoCreateRule) {
  const scope: DefinitionScope = rule.definitionIsPublic ? { kind: 'public' } : { kind: 'private', env };
  if (await ctx.redis.hexists(ctx.keys.definition(scope, rule.definitionName), 'spec')) return;
  throw new AppError(
    'DEFINITION_NOT_FOUND',
    `no definition ${rule.definitionName} (${describeScope(scope)}) for the auto-create rule`,
    { details: { definitionName: rule.definitionName } },
  );
}

/** Whether two rules (or none) are the same. */
export function sameRule(a: AutoCreateRule | undefined, b: AutoCreateRule | undefined): boolean {
  const text = (r: AutoCreateRule | undefined) =>
    r === undefined ? '' : JSON.stringify({ ...r, labels: Object.entries(r.labels).sort() });
  return text(a) === text(b);
}

/** How many devices each key created, in the order asked. */
export async function devicesCreatedBy(
  ctx: AdminContext,
  env: string,
  metas: readonly RuledMeta[],
): Promise<number[]> {
  if (metas.length === 0) return [];
  const counts = await ctx.redis.hmget(ctx.keys.autoCreated(env), ...metas.map(counterOf));
  return counts.map((c) => Number(c ?? 0) || 0);
}

/** What a rotated or re-keyed key hands its successor: its rule and its count. */
export const inheritedRule = (m: RuledMeta): Pick<RuledMeta, 'autoCreate' | 'counterId'> => ({
  ...(m.autoCreate === undefined ? {} : { autoCreate: m.autoCreate }),
  counterId: counterOf(m),
});

export function createApiKeyRuleAdmin<M extends RuledMeta & { name: string }>(
  ctx: AdminContext,
  find: (env: string, idOrName: string) => Promise<M>,
) {
  return {
    /**
     * Sets (a rule), changes or clears (null) a key's auto-create rule; CONFLICT when `revision`
     * is given and the key has another. Answers the key's metadata before and after, and whether
     * it changed (the same rule again changes nothing, its revision stays).
     */
    async setAutoCreate(
      env: string,
      idOrName: string,
      input: AutoCreateRuleInput | null,
      revision?: number,
    ): Promise<{ before: M; after: M; changed: boolean }> {
      await ctx.requireEnv(env);
      const rule = input === null ? undefined : checkAutoCreateRule(input);
      if (rule) await requireRuleDefinition(ctx, env, rule);
      const seen: { before?: M; after?: M } = {};
      await ctx.atomically(
        [ctx.keys.envApiKeys(env)],
        async () => {
          const before = await find(env, idOrName);
          if (revision !== undefined && revision !== revisionOf(before))
            throw new AppError(
              'CONFLICT',
              `API key ${before.name} is at revision ${revisionOf(before)}, not ${revision}: it changed since it was read; read it again and repeat the change`,
              { details: { id: before.id, revision: revisionOf(before) } },
            );
          const { autoCreate: _old, ...rest } = before;
          seen.before = before;
          seen.after = sameRule(before.autoCreate, rule)
            ? before
            : ({
                ...rest,
                ...(rule === undefined ? {} : { autoCreate: rule }),
                revision: revisionOf(before) + 1,
              } as M);
        },
        (m) => {
          if (seen.after !== seen.before && seen.after)
            m.hset(ctx.keys.envApiKeys(env), seen.after.id, JSON.stringify(seen.after));
        },
      );
      const { before, after } = seen as { before: M; after: M };
      return { before, after, changed: before !== after };
    },
  };
}
