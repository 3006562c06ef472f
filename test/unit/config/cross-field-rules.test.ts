import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/load-config.ts';

/** The error loadConfig throws for `env`; fails the test when it throws none. */
function configErrorOf(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('loadConfig accepted the configuration');
}

/**
 * Each rule: settings that break it (the two it names last), and the same settings at the bound,
 * which keep it.
 */
const RULES = [
  {
    rule: 'the whole-request timeout is at least the head timeout',
    broken: { VIGIL_HTTP_HEADERS_TIMEOUT_MS: '5000', VIGIL_HTTP_REQUEST_TIMEOUT_MS: '4999' },
    atBound: { VIGIL_HTTP_HEADERS_TIMEOUT_MS: '5000', VIGIL_HTTP_REQUEST_TIMEOUT_MS: '5000' },
  },
  {
    rule: 'the longest retry delay is at least the first',
    broken: { VIGIL_JOB_BACKOFF_MS: '2000', VIGIL_JOB_BACKOFF_MAX_MS: '1000' },
    atBound: { VIGIL_JOB_BACKOFF_MS: '2000', VIGIL_JOB_BACKOFF_MAX_MS: '2000' },
  },
  {
    rule: 'a delivery stays claimed at least as long as it may take',
    broken: { VIGIL_NOTIFY_TIMEOUT_MS: '20000', VIGIL_NOTIFY_STALLED_INTERVAL_MS: '15000' },
    atBound: { VIGIL_NOTIFY_TIMEOUT_MS: '20000', VIGIL_NOTIFY_STALLED_INTERVAL_MS: '20000' },
  },
  {
    rule: "a session's workbench runs fit a replay of every recent payload",
    broken: { VIGIL_DEVICE_RECENT_PAYLOADS: '100', VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION: '99' },
    atBound: { VIGIL_DEVICE_RECENT_PAYLOADS: '100', VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION: '100' },
  },
  {
    rule: "an environment's workbench runs fit a replay of every recent payload",
    broken: {
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION: '150',
      VIGIL_DEVICE_RECENT_PAYLOADS: '150',
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_ENV: '149',
    },
    atBound: {
      VIGIL_DEVICE_RECENT_PAYLOADS: '150',
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION: '150',
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_ENV: '150',
    },
  },
] as const;

describe('settings that must agree with each other', () => {
  it.each(RULES)('refuses a start where $rule, naming both variables', ({ broken }) => {
    const err = configErrorOf(broken);
    expect(err.code).toBe('CONFIG_INVALID');
    const named = Object.keys(broken).slice(-2);
    expect([...err.variables].sort()).toEqual([...named].sort());
    for (const variable of named) expect(err.message).toContain(variable);
  });

  it.each(RULES)('accepts settings at the bound where $rule', ({ atBound }) => {
    expect(() => loadConfig(atBound)).not.toThrow();
  });

  it('checks the workbench limits only where the api role serves the workbench', () => {
    const worker = {
      VIGIL_ROLES: 'worker',
      VIGIL_DEVICE_RECENT_PAYLOADS: '256',
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION: '60',
      VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_ENV: '120',
    };
    expect(loadConfig(worker).deviceRecentPayloads).toBe(256);
    expect(configErrorOf({ ...worker, VIGIL_ROLES: 'worker,api' }).variables).toEqual([
      'VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION',
      'VIGIL_DEVICE_RECENT_PAYLOADS',
      'VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_ENV',
    ]);
  });

  it('reports a broken rule beside a malformed value only once the values parse', () => {
    const err = configErrorOf({
      VIGIL_API_PORT: 'eighty',
      VIGIL_JOB_BACKOFF_MS: '2000',
      VIGIL_JOB_BACKOFF_MAX_MS: '1000',
    });
    expect(err.variables).toEqual(['VIGIL_API_PORT']);
  });
});
