import { PARSER_FAILURE_CODES, type ParserFailureCode } from './outcome.ts';

/**
 * What one environment's parsers have cost in this process: counters for metrics and the time its
 * isolates ran. Kept per environment for the life of the sandbox, whatever happens to its isolate.
 */
export interface EnvAccount {
  /** Time the environment's isolates ran its parsers (calls and loading), in ms. */
  cpuMs: number;
  /** run() calls that had at least one input. */
  calls: number;
  /** Calls into the isolate (a run() is split when its inputs are large; a fallback adds one per input). */
  isolateCalls: number;
  inputs: number;
  failures: Record<ParserFailureCode, number>;
  /** Batches that timed out or ran out of memory and were re-run one input at a time. */
  batchFallbacks: number;
  /** Isolates replaced after hitting the memory limit. */
  isolateRestarts: number;
  /** Parser contexts compiled (first use, new revision, after eviction or an isolate restart). */
  compiles: number;
  /** Isolates created: the first use, and every use after it was dropped or replaced. */
  isolatesCreated: number;
  /** Isolates dropped while sound: idle for too long, or the least recently used beyond the bound. */
  isolatesDropped: number;
}

/** A fresh account, all zero. */
export function newEnvAccount(): EnvAccount {
  return {
    cpuMs: 0,
    calls: 0,
    isolateCalls: 0,
    inputs: 0,
    failures: {
      PARSER_TIMEOUT: 0,
      PARSER_MEMORY: 0,
      PARSER_ERROR: 0,
      PARSER_BAD_RESULT: 0,
      PARSER_CODEC_ERRORS: 0,
    },
    batchFallbacks: 0,
    isolateRestarts: 0,
    compiles: 0,
    isolatesCreated: 0,
    isolatesDropped: 0,
  };
}

/** Adds `from` into `into` (for totals over environments). */
export function addAccount(into: EnvAccount, from: EnvAccount): void {
  into.cpuMs += from.cpuMs;
  into.calls += from.calls;
  into.isolateCalls += from.isolateCalls;
  into.inputs += from.inputs;
  for (const code of PARSER_FAILURE_CODES) into.failures[code] += from.failures[code];
  into.batchFallbacks += from.batchFallbacks;
  into.isolateRestarts += from.isolateRestarts;
  into.compiles += from.compiles;
  into.isolatesCreated += from.isolatesCreated;
  into.isolatesDropped += from.isolatesDropped;
}
