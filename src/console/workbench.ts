/**
 * The parser workbench's runs: a definition's parser on a payload (Run) or on a device's recent
 * payloads (Replay), in a sandbox of the console's own with the workers' limits, each environment's
 * runs in that environment's own isolate (one environment's parser filling its heap fails only that
 * environment's runs). Runs are counted against the session's and the environment's limits
 * (workbench-limits.ts) before they are queued. A sandbox call is synchronous, so runs wait in one
 * queue and go one payload at a time, letting other requests in between: a replay of 20 payloads
 * holds the event loop for one parser call at a time (at most the sandbox's time limit), never for
 * all of them. A full queue answers WORKBENCH_BUSY.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Status } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { createSandbox, type Sandbox, type SandboxOptions } from '../sandbox/sandbox.ts';
import type { DeviceSettings } from '../tenancy/tenancy-store.ts';
import type { DefinitionRecord } from '../tenancy/types.ts';
import { tryDefinition, type DefinitionTestReport } from '../worker/definition-trial.ts';
import type { RecentPayload } from '../recent-payloads/recent-payload-codec.ts';
import type { Locale } from '../domain/types.ts';
import type { WorkbenchLimits } from './workbench-limits.ts';

export interface Workbench {
  /** Runs the definition's parser on `payload` and converts its result. */
  run(t: Trial, payload: string, payloadRaw?: string): Promise<DefinitionTestReport>;
  /** Runs it on each recent payload and compares with what the payload got then. */
  replay(t: Trial, payloads: readonly RecentPayload[]): Promise<ReplayRow[]>;
  close(): void;
}

/** What a run needs besides the payload. */
export interface Trial {
  env: string;
  /** Who runs it, for the per-session limit: the session's key hash. */
  session: string;
  definition: DefinitionRecord;
  locale: Locale;
  settings?: DeviceSettings | undefined;
}

export interface StatusChange {
  sensorName: string;
  then: Status | null;
  now: Status | null;
}

export interface ReplayRow {
  payload: RecentPayload;
  /** Null when the payload was shortened when kept: it is not the payload, so it is not run. */
  now: DefinitionTestReport | null;
  /**
   * `fails`: accepted then, rejected now; `recovers`: the other way; `changes`: a data point's
   * status differs; `same`; `skipped`: shortened.
   */
  verdict: 'fails' | 'recovers' | 'changes' | 'same' | 'skipped';
  changes: StatusChange[];
}

/** Runs waiting at most (a replay counts one per payload). */
const MAX_QUEUED = 64;

export interface WorkbenchDeps {
  /** The workers' limits, and the bounds of the console's isolates (VIGIL_SANDBOX_*). */
  sandbox: Pick<SandboxOptions, 'timeoutMs' | 'memoryLimitMb' | 'maxIsolates' | 'isolateIdleMs'>;
  /** Runs per session and environment; none: unlimited (tests of the runs themselves). */
  limits?: WorkbenchLimits;
  log: Logger;
}

/** The console's workbench; its sandbox is created on the first run. */
export function createWorkbench(deps: WorkbenchDeps): Workbench {
  let sandbox: Sandbox | undefined;
  let queued = 0;
  let tail: Promise<unknown> = Promise.resolve();
  let closed = false;

  const sandboxOf = (): Sandbox =>
    (sandbox ??= createSandbox({ ...deps.sandbox, log: deps.log.child({ component: 'workbench' }) }));

  /** Counts `runs` runs against the limits, refusing at once what could not even wait in the queue. */
  async function admit(t: Trial, runs: number): Promise<void> {
    reserve(runs);
    await deps.limits?.take(t.env, t.session, runs);
    reserve(runs);
  }

  /** Queues one parser call; each starts on a turn of its own. */
  function enqueue<T>(work: () => T): Promise<T> {
    if (closed) return Promise.reject(new AppError('UNAVAILABLE', 'The console is stopping.'));
    queued += 1;
    const result = tail.then(async () => {
      await nextTurn();
      try {
        return work();
      } finally {
        queued -= 1;
      }
    });
    tail = result.catch(() => undefined);
    return result;
  }

  function reserve(n: number): void {
    if (queued + n > MAX_QUEUED)
      throw new AppError(
        'WORKBENCH_BUSY',
        'The parser workbench is busy with other runs; try again in a moment.',
        {
          retryAfterSeconds: 1,
        },
      );
  }

  const trialOf = (t: Trial, payload: string, payloadRaw?: string) => {
    const d = t.definition;
    return {
      spec: d.spec,
      parserSource: d.parserSource,
      parserFilename: `${d.spec.name}.js`,
      payload,
      ...(payloadRaw === undefined ? {} : { payloadRaw }),
      locale: t.locale,
      ...(t.settings ? { settings: t.settings } : {}),
      env: t.env,
      codeId: `console:def:${d.isPublic ? 'public' : 'private'}:${d.spec.name}`,
      revision: d.version,
    };
  };

  return {
    async run(t, payload, payloadRaw) {
      await admit(t, 1);
      return enqueue(() => tryDefinition(sandboxOf(), trialOf(t, payload, payloadRaw)));
    },
    async replay(t, payloads) {
      const runnable = payloads.filter(isWhole);
      await admit(t, runnable.length);
      const reports = await Promise.all(
        runnable.map((p) => enqueue(() => tryDefinition(sandboxOf(), trialOf(t, p.payload, p.raw)))),
      );
      const byPayload = new Map(runnable.map((p, i) => [p, reports[i]!]));
      return payloads.map((p) => compare(p, byPayload.get(p) ?? null));
    },
    close() {
      closed = true;
      sandbox?.close();
    },
  };
}

/** A kept payload that was not shortened (neither it nor the body it came from). */
const isWhole = (p: RecentPayload) => p.payloadBytes === undefined && p.rawBytes === undefined && !p.hex;

function compare(payload: RecentPayload, now: DefinitionTestReport | null): ReplayRow {
  if (!now) return { payload, now, verdict: 'skipped', changes: [] };
  const failedThen = payload.outcome === 'rejected';
  const failsNow = !now.ok;
  if (failsNow && !failedThen) return { payload, now, verdict: 'fails', changes: [] };
  if (!failsNow && failedThen) return { payload, now, verdict: 'recovers', changes: [] };
  if (!now.ok) return { payload, now, verdict: 'same', changes: [] };
  const nowStatus = new Map(now.dataPoints.map((p) => [p.sensorName, p.currentStatus]));
  const names = new Set([...Object.keys(payload.statuses), ...nowStatus.keys()]);
  const changes: StatusChange[] = [];
  for (const name of names) {
    const then = Object.hasOwn(payload.statuses, name) ? (payload.statuses[name] ?? null) : null;
    const current = nowStatus.get(name) ?? null;
    if (then !== current) changes.push({ sensorName: name, then, now: current });
  }
  return { payload, now, verdict: changes.length > 0 ? 'changes' : 'same', changes };
}
