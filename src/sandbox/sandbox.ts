import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { checkInputs, chunksBySize } from './batch.ts';
import { createParserBreaker } from './breaker.ts';
import { addAccount, newEnvAccount, type EnvAccount } from './env-account.ts';
import type { EnvIsolate } from './env-isolate.ts';
import { describeUserError, isMemoryLimit, isTimeout } from './host-errors.ts';
import { createIsolatePool } from './isolate-pool.ts';
import { decodeBatchResult, parseFailure, type ParseFailure, type ParseOutcome } from './outcome.ts';
import { DEFAULT_PARSER_FILENAME, type ParserEntry } from './parser-context.ts';

import { entryPointOf, type ParserCode, type ParserInput } from './parser-code.ts';

export type { ParseOutcome, ParseFailure, ParserFailureCode } from './outcome.ts';
export type {
  ParserCode,
  ParserFormat,
  ParserInput,
  PayloadInput,
  Uplink,
  UplinkInput,
} from './parser-code.ts';

export interface RunOptions {
  /**
   * Definition parsers: a result whose JSON is not an object (array, null, number, string) is
   * PARSER_BAD_RESULT. A ts013 codec's data must always be an object.
   */
  expectObject?: boolean;
}

export interface SandboxOptions {
  /** Time allowed per input, in ms (wall-clock inside the isolate). */
  timeoutMs: number;
  /** Heap limit of each environment's isolate, in MB (minimum 8). */
  memoryLimitMb: number;
  log: Logger;
  /** Largest JSON result per input, in characters. Default 1 MiB. */
  maxResultBytes?: number;
  /** Upper bound of a whole batch call's timeout, in ms (never below timeoutMs). Default 1000. */
  maxBatchTimeoutMs?: number;
  /** Contexts kept compiled per environment (~175 KB of its isolate's heap each); the least recently used is dropped. Default 50. */
  maxContexts?: number;
  /** Isolates kept at most, one per environment; the least recently used is disposed beyond it. Default 128. */
  maxIsolates?: number;
  /** An environment's isolate unused for this long is disposed, in ms. Default 900,000 (15 minutes). */
  isolateIdleMs?: number;
  /** Monotonic time in ms, above 0, for idle isolates (default performance.now). */
  clock?: () => number;
  /** Consecutive PARSER_TIMEOUT / PARSER_MEMORY failures that suspend a parser. Default 5. */
  suspendAfter?: number;
  /** How long a suspended parser's payloads fail without running, in ms (0: never suspend). Default 10,000. */
  suspendMs?: number;
  /** Called once if V8 loses control of an isolate; the process should then finish its work and exit. */
  onCatastrophicError?: (message: string) => void;
}

/** Counters for metrics, of every environment or of one; a snapshot, safe to keep. */
export interface SandboxStats extends Omit<EnvAccount, 'cpuMs'> {
  /** Parser contexts currently cached. */
  cachedContexts: number;
  /** Isolates currently alive (one per environment at most). */
  isolates: number;
}

export interface Sandbox {
  /**
   * Parses a batch with one synchronous call into the isolate of `code.env` and returns one outcome
   * per input, in order. A failure affects only its own input. Throws only when the sandbox is closed
   * or broken, or (INTERNAL) when an input is not of the code's format: `PayloadInput`s for
   * parsePayload, well-formed `UplinkInput`s for a ts013 codec.
   */
  run(code: ParserCode, inputs: readonly ParserInput[], options?: RunOptions): ParseOutcome[];
  /** Counters of every environment together, or of `env` alone. */
  stats(env?: string): SandboxStats;
  /**
   * Time each environment's parsers have run in this process, in ms, cumulative (it survives the
   * isolate's replacement or disposal): isolated-vm's time in the isolate, which counts a parser
   * that blocks as well as one that computes.
   */
  cpuTimeByEnv(): ReadonlyMap<string, number>;
  /** Disposes every isolate and context; safe to call twice. */
  close(): void;
}

const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;
const DEFAULT_MAX_BATCH_TIMEOUT_MS = 1000;
const DEFAULT_MAX_CONTEXTS = 50;
const DEFAULT_MAX_ISOLATES = 128;
const DEFAULT_ISOLATE_IDLE_MS = 900_000;
const DEFAULT_SUSPEND_AFTER = 5;
const DEFAULT_SUSPEND_MS = 10_000;
/** Re-runs of a call that timed out before using half its CPU time (the machine was busy). */
const STARVED_RETRIES = 3;
// A batch's input JSON, parsed copies included, must leave the isolate most of its heap.
const INPUT_SHARE_OF_HEAP = 1 / 8;

/** Creates a process's parser sandbox: one isolate per environment, one cached context per parser. */
export function createSandbox(options: SandboxOptions): Sandbox {
  const log = options.log.child({ module: 'sandbox' });
  const limits = {
    timeoutMs: options.timeoutMs,
    memoryLimitMb: options.memoryLimitMb,
    maxResultChars: options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
  };
  const maxBatchTimeoutMs = Math.max(
    options.timeoutMs,
    options.maxBatchTimeoutMs ?? DEFAULT_MAX_BATCH_TIMEOUT_MS,
  );
  const maxBatchInputChars = options.memoryLimitMb * 1024 * 1024 * INPUT_SHARE_OF_HEAP;
  const suspendMs = options.suspendMs ?? DEFAULT_SUSPEND_MS;
  const breaker = createParserBreaker({
    tripAfter: suspendMs > 0 ? Math.max(1, options.suspendAfter ?? DEFAULT_SUSPEND_AFTER) : Infinity,
    suspendMs,
  });
  let closed = false;
  let catastrophe: string | undefined;
  const pool = createIsolatePool({
    limits,
    maxContexts: Math.max(1, options.maxContexts ?? DEFAULT_MAX_CONTEXTS),
    maxIsolates: Math.max(1, options.maxIsolates ?? DEFAULT_MAX_ISOLATES),
    idleMs: Math.max(1, options.isolateIdleMs ?? DEFAULT_ISOLATE_IDLE_MS),
    clock: options.clock ?? (() => performance.now()),
    log,
    onCatastrophicError(message) {
      catastrophe = message;
      log.fatal({ reason: message }, 'V8 lost control of a parser isolate');
      options.onCatastrophicError?.(message);
    },
  });

  function assertUsable(): void {
    if (closed) throw new AppError('INTERNAL', 'the parser sandbox is closed');
    if (catastrophe !== undefined) throw new AppError('INTERNAL', 'the parser sandbox is broken');
  }

  /** The parser's entry in its environment's isolate; a memory failure while loading replaces the isolate. */
  function entryFor(code: ParserCode): { isolate: EnvIsolate; entry: ParserEntry } {
    assertUsable();
    const isolate = pool.isolateOf(code.env);
    const entry = isolate.parser(code);
    if (isolate.isDisposed()) pool.replace(code.env);
    if (entry.kind === 'broken') {
      log.info(
        { env: code.env, parser: code.id, revision: code.revision, reason: entry.failure.message },
        'parser cannot load',
      );
    }
    return { isolate, entry };
  }

  function runGuarded(
    code: ParserCode,
    inputs: readonly ParserInput[],
    expectObject: boolean,
    starvedRetries = STARVED_RETRIES,
  ): ParseOutcome[] {
    // A parser that keeps hitting its limits would take the worker's time from every environment.
    const suspended = breaker.suspended(breakerKey(code), code.revision);
    if (suspended !== undefined) return inputs.map(() => suspended);
    const { isolate, entry } = entryFor(code);
    if (entry.kind === 'broken') return inputs.map(() => entry.failure);
    const account = pool.accountOf(code.env);
    const timeoutMs = Math.max(
      options.timeoutMs,
      Math.min(options.timeoutMs * inputs.length, maxBatchTimeoutMs),
    );
    // Only a single-input call is run again when starved (below); a batch falls back to those.
    // process.cpuUsage sums every thread of the process, which cost ~1 % of a busy worker per batch.
    const cpuBefore = inputs.length === 1 ? process.cpuUsage() : undefined;
    try {
      account.isolateCalls += 1;
      return counted(
        code,
        decodeBatchResult(isolate.call(entry, inputs, expectObject, timeoutMs), inputs.length),
      );
    } catch (err) {
      const failure = callFailure(err, code, isolate, timeoutMs);
      // isolated-vm's timeout is wall-clock (its cpuTime too): on a busy machine a call can time out
      // without having had its CPU time, failing a good payload. The process's CPU time tells: a call
      // that got less than half of it runs again (a batch re-runs its inputs one by one anyway; a
      // looping parser then costs a few more tries, and its suspension bounds them).
      const used = cpuBefore && process.cpuUsage(cpuBefore);
      const cpuUsedMs = used ? (used.user + used.system) / 1000 : Infinity;
      if (failure.code === 'PARSER_TIMEOUT' && starvedRetries > 0 && cpuUsedMs < timeoutMs / 2) {
        log.debug(
          { env: code.env, parser: code.id, cpuUsedMs, timeoutMs },
          'parser call starved of CPU; running it again',
        );
        return runGuarded(code, inputs, expectObject, starvedRetries - 1);
      }
      if (inputs.length === 1) return counted(code, [failure]);
      account.batchFallbacks += 1;
      log.warn(
        {
          env: code.env,
          parser: code.id,
          revision: code.revision,
          inputs: inputs.length,
          code: failure.code,
        },
        'parser batch failed as a whole; re-running its inputs one at a time',
      );
      return inputs.map((input) => runGuarded(code, [input], expectObject)[0] ?? failure);
    }
  }

  /** Feeds a call's outcomes to the breaker (a batch that failed as a whole is re-run, not counted). */
  function counted(code: ParserCode, outcomes: ParseOutcome[]): ParseOutcome[] {
    if (breaker.record(breakerKey(code), code.revision, outcomes)) {
      log.warn(
        { env: code.env, parser: code.id, revision: code.revision, suspendMs },
        'parser keeps hitting its limits; suspended',
      );
    }
    return outcomes;
  }

  function callFailure(err: unknown, code: ParserCode, isolate: EnvIsolate, timeoutMs: number): ParseFailure {
    if (isolate.isDisposed() || isMemoryLimit(err)) {
      pool.replace(code.env);
      return parseFailure(
        'PARSER_MEMORY',
        `${entryPointOf(code.format)} went over the sandbox memory limit of ${options.memoryLimitMb} MB`,
      );
    }
    if (isTimeout(err)) {
      return parseFailure('PARSER_TIMEOUT', `${entryPointOf(code.format)} ran longer than ${timeoutMs} ms`);
    }
    return parseFailure('PARSER_ERROR', describeUserError(err, code.filename ?? DEFAULT_PARSER_FILENAME));
  }

  return {
    run(code, inputs, runOptions = {}) {
      assertUsable();
      if (inputs.length === 0) return [];
      checkInputs(code.format, inputs);
      const account = pool.accountOf(code.env);
      account.calls += 1;
      account.inputs += inputs.length;
      const expectObject = runOptions.expectObject === true;
      const outcomes: ParseOutcome[] = [];
      for (const chunk of chunksBySize(inputs, maxBatchInputChars)) {
        for (const outcome of runGuarded(code, chunk, expectObject)) outcomes.push(outcome);
      }
      for (const outcome of outcomes) if (!outcome.ok) account.failures[outcome.code] += 1;
      return outcomes;
    },
    stats(env) {
      const total = newEnvAccount();
      const accounts = pool.accounts();
      const chosen = env === undefined ? [...accounts.values()] : [accounts.get(env) ?? newEnvAccount()];
      for (const account of chosen) addAccount(total, account);
      const { isolates, contexts } = pool.sizes(env);
      return {
        calls: total.calls,
        isolateCalls: total.isolateCalls,
        inputs: total.inputs,
        failures: total.failures,
        batchFallbacks: total.batchFallbacks,
        isolateRestarts: total.isolateRestarts,
        compiles: total.compiles,
        isolatesCreated: total.isolatesCreated,
        isolatesDropped: total.isolatesDropped,
        cachedContexts: contexts,
        isolates,
      };
    },
    cpuTimeByEnv() {
      return new Map([...pool.accounts()].map(([env, account]) => [env, account.cpuMs]));
    },
    close() {
      if (closed) return;
      closed = true;
      pool.close();
    },
  };
}

/** The breaker's identity of a parser: the same public definition is a parser per environment. */
const breakerKey = (code: ParserCode): string => `${code.env}\n${code.id}\n${code.format ?? 'parsePayload'}`;
