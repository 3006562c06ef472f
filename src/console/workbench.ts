/**
 * The parser workbench's runs: a definition — a stored version, or the draft in the editor — on a
 * payload (Run), and a draft over the recent payloads of the definition's devices beside the
 * published version (Replay). They are the API's own trials (src/management/definition-trials.ts,
 * the worker's conversion in a thread of their own, off the API's event loop), counted per session
 * and per environment against the workbench limits. The console's trials run in a thread of the
 * console's own, started on its first run; /definitions/run and /replay have theirs.
 */
import type { Logger } from '../log/logger.ts';
import {
  createDefinitionTrials,
  type DefinitionTrialDeps,
  type DefinitionTrials,
} from '../management/definition-trials.ts';
import type { WorkbenchLimits } from '../management/trial-limits.ts';
import { createTrialRunner, type TrialRunnerOptions } from '../management/trial-runner.ts';

export interface Workbench {
  /** The trials of the console (each caller a session), reading what they run on from `lookups`. */
  trials(lookups: Pick<DefinitionTrialDeps, 'store' | 'redis' | 'keys' | 'replayLimit'>): DefinitionTrials;
  close(): void;
}

export interface WorkbenchDeps {
  /** The workers' limits, and the bounds of the console's isolates (VIGIL_SANDBOX_*). */
  sandbox: TrialRunnerOptions['sandbox'];
  /** Runs per session and environment; none: unlimited (tests of the runs themselves). */
  limits?: WorkbenchLimits;
  log: Logger;
}

/** The console's workbench; its thread is started on the first run. */
export function createWorkbench(deps: WorkbenchDeps): Workbench {
  const runner = createTrialRunner({
    sandbox: deps.sandbox,
    log: deps.log.child({ component: 'workbench' }),
  });
  return {
    trials: (lookups) => createDefinitionTrials({ runner, limits: deps.limits, ...lookups }),
    close() {
      void runner.close();
    },
  };
}
