import ivm from 'isolated-vm';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { callParser, chunksBySize } from './batch.ts';
import { createParserBreaker } from './breaker.ts';
import { HARNESS_FILENAME, HARNESS_SOURCE } from './harness.ts';
import { describeUserError, isMemoryLimit, isTimeout } from './host-errors.ts';
import {
  decodeBatchResult,
  parseFailure,
  type ParseFailure,
  type ParseOutcome,
  type ParserFailureCode,
} from './outcome.ts';
import { compileParser, DEFAULT_PARSER_FILENAME, releaseParser, type ParserEntry } from './parser-context.ts';

export type { ParseOutcome, ParseFailure, ParserFailureCode } from './outcome.ts';

/** User code with its identity; a context is cached per (id, revision). */
export interface ParserCode {
  /** Cache identity, e.g. 'def:public:ComfortSensors' or 'pre:envname'. Different ids never share globals. */
  id: string;
  /** Changes whenever the source changes; a new revision replaces the cached context. */
  revision: number;
  source: string;
  /** The user's file name, used in stack traces and line:column messages. Default 'parser.js'. */
  filename?: string;
}

export interface ParserInput {
  payloadStr: string;
  payloadRaw: string;
}

export interface RunOptions {
  /** Definition parsers: a result whose JSON is not an object (array, null, number, string) is PARSER_BAD_RESULT. */
  expectObject?: boolean;
}

export interface SandboxOptions {
  /** Time allowed per input, in ms (wall-clock inside the isolate). */
  timeoutMs: number;
  /** Heap limit of the isolate, in MB (minimum 8). */
  memoryLimitMb: number;
  log: Logger;
  /** Largest JSON result per input, in characters. Default 1 MiB. */
  maxResultBytes?: number;
  /** Upper bound of a whole batch call's timeout, in ms (never below timeoutMs). Default 1000. */
  maxBatchTimeoutMs?: number;
  /** Contexts kept compiled (~175 KB of isolate heap each); the least recently used is dropped. Default 50. */
  maxContexts?: number;
  /** Consecutive PARSER_TIMEOUT / PARSER_MEMORY failures that suspend a parser. Default 5. */
  suspendAfter?: number;
  /** How long a suspended parser's payloads fail without running, in ms (0: never suspend). Default 10,000. */
  suspendMs?: number;
  /** Called once if V8 loses control of the isolate; the process should then finish its work and exit. */
  onCatastrophicError?: (message: string) => void;
}

/** Counters for metrics; a snapshot, safe to keep. */
export interface SandboxStats {
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
  /** Parser contexts currently cached. */
  cachedContexts: number;
}

export interface Sandbox {
  /**
   * Parses a batch with one synchronous call into the isolate and returns one outcome per input,
   * in order. A failure affects only its own input. Throws only when the sandbox is closed or broken.
   */
  run(code: ParserCode, inputs: readonly ParserInput[], options?: RunOptions): ParseOutcome[];
  stats(): SandboxStats;
  /** Disposes the isolate and every context; safe to call twice. */
  close(): void;
}

const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;
const DEFAULT_MAX_BATCH_TIMEOUT_MS = 1000;
const DEFAULT_MAX_CONTEXTS = 50;
const DEFAULT_SUSPEND_AFTER = 5;
const DEFAULT_SUSPEND_MS = 10_000;
/** Re-runs of a call that timed out before using half its CPU time (the machine was busy). */
const STARVED_RETRIES = 3;
// A batch's input JSON, parsed copies included, must leave the isolate most of its heap.
const INPUT_SHARE_OF_HEAP = 1 / 8;

/** Creates the per-process parser sandbox: one isolate, one cached context per parser id. */
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
  const maxContexts = Math.max(1, options.maxContexts ?? DEFAULT_MAX_CONTEXTS);
  const maxBatchInputChars = options.memoryLimitMb * 1024 * 1024 * INPUT_SHARE_OF_HEAP;
  const counters = newStats();
  const suspendMs = options.suspendMs ?? DEFAULT_SUSPEND_MS;
  const breaker = createParserBreaker({
    tripAfter: suspendMs > 0 ? Math.max(1, options.suspendAfter ?? DEFAULT_SUSPEND_AFTER) : Infinity,
    suspendMs,
  });
  // The compiled parsers, least recently used evicted beyond maxContexts; leaving the cache (evicted,
  // replaced by a new revision, or cleared with the isolate) releases an entry's isolate handles.
  const parsers = new LRUCache<string, ParserEntry>({
    max: maxContexts,
    dispose: (entry) => releaseParser(entry),
  });
  let runtime: { isolate: ivm.Isolate; harness: ivm.Script } | undefined;
  let closed = false;
  let catastrophe: string | undefined;

  function assertUsable(): void {
    if (closed) throw new AppError('INTERNAL', 'the parser sandbox is closed');
    if (catastrophe !== undefined) throw new AppError('INTERNAL', 'the parser sandbox is broken');
  }

  function currentRuntime(): { isolate: ivm.Isolate; harness: ivm.Script } {
    assertUsable();
    if (runtime === undefined || runtime.isolate.isDisposed) {
      const isolate = new ivm.Isolate({ memoryLimit: options.memoryLimitMb, onCatastrophicError });
      const harness = isolate.compileScriptSync(HARNESS_SOURCE, { filename: HARNESS_FILENAME });
      runtime = { isolate, harness };
    }
    return runtime;
  }

  function onCatastrophicError(message: string): void {
    catastrophe = message;
    log.fatal({ reason: message }, 'V8 lost control of the parser isolate');
    options.onCatastrophicError?.(message);
  }

  /** Drops the isolate after a memory failure; the next call builds a new one and recompiles lazily. */
  function replaceIsolate(): void {
    parsers.clear();
    if (runtime !== undefined && !runtime.isolate.isDisposed) runtime.isolate.dispose();
    runtime = undefined;
    counters.isolateRestarts += 1;
    log.warn({ memoryLimitMb: options.memoryLimitMb }, 'parser isolate hit its memory limit; replacing it');
  }

  function entryFor(code: ParserCode): ParserEntry {
    const cached = parsers.get(code.id);
    if (cached?.revision === code.revision) return cached;
    if (cached !== undefined) parsers.delete(code.id);
    const { isolate, harness } = currentRuntime();
    const entry = compileParser(isolate, harness, code, limits);
    counters.compiles += 1;
    if (isolate.isDisposed) replaceIsolate();
    if (entry.kind === 'broken') {
      log.info(
        { parser: code.id, revision: code.revision, reason: entry.failure.message },
        'parser cannot load',
      );
    }
    // A memory failure while loading may be the heap's fault rather than this parser's: retry it next time.
    if (entry.kind === 'ready' || entry.failure.code !== 'PARSER_MEMORY') parsers.set(code.id, entry);
    return entry;
  }

  function runGuarded(
    code: ParserCode,
    inputs: readonly ParserInput[],
    expectObject: boolean,
    starvedRetries = STARVED_RETRIES,
  ): ParseOutcome[] {
    // A parser that keeps hitting its limits would take the worker's time from every environment.
    const suspended = breaker.suspended(code.id, code.revision);
    if (suspended !== undefined) return inputs.map(() => suspended);
    const entry = entryFor(code);
    if (entry.kind === 'broken') return inputs.map(() => entry.failure);
    const timeoutMs = Math.max(
      options.timeoutMs,
      Math.min(options.timeoutMs * inputs.length, maxBatchTimeoutMs),
    );
    // Only a single-input call is run again when starved (below); a batch falls back to those.
    // process.cpuUsage sums every thread of the process, which cost ~1 % of a busy worker per batch.
    const cpuBefore = inputs.length === 1 ? process.cpuUsage() : undefined;
    try {
      counters.isolateCalls += 1;
      return counted(
        code,
        decodeBatchResult(callParser(entry, inputs, expectObject, timeoutMs), inputs.length),
      );
    } catch (err) {
      const failure = callFailure(err, code, timeoutMs);
      // isolated-vm's timeout is wall-clock (its cpuTime too): on a busy machine a call can time out
      // without having had its CPU time, failing a good payload. The process's CPU time tells: a call
      // that got less than half of it runs again (a batch re-runs its inputs one by one anyway; a
      // looping parser then costs a few more tries, and its suspension bounds them).
      const used = cpuBefore && process.cpuUsage(cpuBefore);
      const cpuUsedMs = used ? (used.user + used.system) / 1000 : Infinity;
      if (failure.code === 'PARSER_TIMEOUT' && starvedRetries > 0 && cpuUsedMs < timeoutMs / 2) {
        log.debug({ parser: code.id, cpuUsedMs, timeoutMs }, 'parser call starved of CPU; running it again');
        return runGuarded(code, inputs, expectObject, starvedRetries - 1);
      }
      if (inputs.length === 1) return counted(code, [failure]);
      counters.batchFallbacks += 1;
      log.warn(
        { parser: code.id, revision: code.revision, inputs: inputs.length, code: failure.code },
        'parser batch failed as a whole; re-running its inputs one at a time',
      );
      return inputs.map((input) => runGuarded(code, [input], expectObject)[0] ?? failure);
    }
  }

  /** Feeds a call's outcomes to the breaker (a batch that failed as a whole is re-run, not counted). */
  function counted(code: ParserCode, outcomes: ParseOutcome[]): ParseOutcome[] {
    if (breaker.record(code.id, code.revision, outcomes)) {
      log.warn(
        { parser: code.id, revision: code.revision, suspendMs },
        'parser keeps hitting its limits; suspended',
      );
    }
    return outcomes;
  }

  function callFailure(err: unknown, code: ParserCode, timeoutMs: number): ParseFailure {
    if (runtime === undefined || runtime.isolate.isDisposed || isMemoryLimit(err)) {
      replaceIsolate();
      return parseFailure(
        'PARSER_MEMORY',
        `parsePayload went over the sandbox memory limit of ${options.memoryLimitMb} MB`,
      );
    }
    if (isTimeout(err)) return parseFailure('PARSER_TIMEOUT', `parsePayload ran longer than ${timeoutMs} ms`);
    return parseFailure('PARSER_ERROR', describeUserError(err, code.filename ?? DEFAULT_PARSER_FILENAME));
  }

  return {
    run(code, inputs, runOptions = {}) {
      assertUsable();
      if (inputs.length === 0) return [];
      counters.calls += 1;
      counters.inputs += inputs.length;
      const expectObject = runOptions.expectObject === true;
      const outcomes: ParseOutcome[] = [];
      for (const chunk of chunksBySize(inputs, maxBatchInputChars)) {
        for (const outcome of runGuarded(code, chunk, expectObject)) outcomes.push(outcome);
      }
      for (const outcome of outcomes) if (!outcome.ok) counters.failures[outcome.code] += 1;
      return outcomes;
    },
    stats() {
      return { ...counters, failures: { ...counters.failures }, cachedContexts: parsers.size };
    },
    close() {
      if (closed) return;
      closed = true;
      parsers.clear();
      if (runtime !== undefined && !runtime.isolate.isDisposed) runtime.isolate.dispose();
      runtime = undefined;
    },
  };
}

function newStats(): SandboxStats {
  return {
    calls: 0,
    isolateCalls: 0,
    inputs: 0,
    failures: { PARSER_TIMEOUT: 0, PARSER_MEMORY: 0, PARSER_ERROR: 0, PARSER_BAD_RESULT: 0 },
    batchFallbacks: 0,
    isolateRestarts: 0,
    compiles: 0,
    cachedContexts: 0,
  };
}
