/**
 * Rules between settings, checked once every setting parsed: a value valid alone that contradicts
 * another setting stops the start with CONFIG_INVALID naming both variables, rather than failing
 * later (Node refuses a server whose request timeout is below its head timeout) or quietly
 * misbehaving (a delivery taken over while it still runs is sent twice).
 */
import { SETTINGS, type Config } from './schema.ts';

type NumericKey = { [K in keyof Config]: Config[K] extends number ? K : never }[keyof Config];

/** `key` must be at least `floor`, for the reason `why`; only where `applies` says so (always by default). */
export interface CrossFieldRule {
  key: NumericKey;
  floor: NumericKey;
  why: string;
  applies?: (config: Config) => boolean;
}

/** A broken rule: its message and the two variables it names. */
export interface CrossFieldProblem {
  text: string;
  variables: [string, string];
}

const servesWorkbench = (config: Config) => config.roles.includes('api');

/** Every rule between settings; each setting's description says it too. */
export const CROSS_FIELD_RULES: readonly CrossFieldRule[] = [
  {
    key: 'httpRequestTimeoutMs',
    floor: 'httpHeadersTimeoutMs',
    why: "a request's head is part of the request",
  },
  {
    key: 'jobBackoffMaxMs',
    floor: 'jobBackoffMs',
    why: 'the retry delay starts at VIGIL_JOB_BACKOFF_MS and grows up to this',
  },
  {
    key: 'notifyStalledIntervalMs',
    floor: 'notifyTimeoutMs',
    why: 'a delivery still running would be taken over by another notifier and sent twice',
  },
  {
    key: 'workbenchRunsPerMinutePerSession',
    floor: 'deviceRecentPayloads',
    why: 'a replay runs every recent payload of a device in one request, or none of them',
    applies: servesWorkbench,
  },
  {
    key: 'workbenchRunsPerMinutePerEnv',
    floor: 'deviceRecentPayloads',
    why: 'a replay runs every recent payload of a device in one request, or none of them',
    applies: servesWorkbench,
  },
];

/** The rules `config` breaks; none when it keeps them all. */
export function crossFieldProblems(
  config: Config,
  rules: readonly CrossFieldRule[] = CROSS_FIELD_RULES,
): CrossFieldProblem[] {
  return rules
    .filter((rule) => (rule.applies?.(config) ?? true) && config[rule.key] < config[rule.floor])
    .map(({ key, floor, why }) => {
      const [name, floorName] = [SETTINGS[key].env, SETTINGS[floor].env];
      return {
        text: `${name}=${config[key]} must be at least ${floorName}=${config[floor]} (${why})`,
        variables: [name, floorName],
      };
    });
}
