/**
 * One environment's parser isolate: a V8 heap of its own (`memoryLimitMb`), the harness compiled
 * once, and one context per parser that environment runs (its pre-parser, its private definitions,
 * the public definitions its devices use), the least recently used dropped beyond `maxContexts`.
 * Whatever one environment's parsers keep, leak or exhaust in this heap, no other environment's
 * parser shares it. Time spent in the isolate is added to the environment's account as it is
 * spent, so the account outlives the isolate.
 */
import ivm from 'isolated-vm';
import { LRUCache } from 'lru-cache';
import type { EnvAccount } from './env-account.ts';
import { callParser } from './batch.ts';
import { HARNESS_FILENAME, HARNESS_SOURCE } from './harness.ts';
import {
  compileParser,
  isCompiledFrom,
  releaseParser,
  type CompileLimits,
  type ParserEntry,
  type ReadyParser,
} from './parser-context.ts';
import type { ParserCode, ParserInput } from './parser-code.ts';

export interface EnvIsolate {
  readonly env: string;
  /** True once V8 disposed the isolate (memory limit) or it was closed: it must be replaced. */
  isDisposed(): boolean;
  /** The parser's context from the cache, or compiled now; a parser that cannot load is a BrokenParser. */
  parser(code: ParserCode): ParserEntry;
  /** One batch call into `entry`'s context (batch.ts); throws isolated-vm's errors. */
  call(entry: ReadyParser, inputs: readonly ParserInput[], expectObject: boolean, timeoutMs: number): unknown;
  /** Parser contexts currently compiled. */
  contexts(): number;
  /** The isolate's heap now, in bytes: in use (ArrayBuffers included) and reserved (bench/sandbox-isolates.ts). */
  heapBytes(): { used: number; total: number };
  /** Frees the contexts and the isolate; safe to call twice and after V8 disposed it. */
  dispose(): void;
}

export interface EnvIsolateOptions {
  env: string;
  limits: CompileLimits;
  /** Contexts kept compiled (~175 KB of this isolate's heap each). */
  maxContexts: number;
  /** Where this environment's compiles and parser time are counted. */
  account: EnvAccount;
  onCatastrophicError: (message: string) => void;
}

/** Creates the isolate of one environment and compiles the harness into it. */
export function createEnvIsolate(options: EnvIsolateOptions): EnvIsolate {
  const { account, limits } = options;
  const isolate = new ivm.Isolate({
    memoryLimit: limits.memoryLimitMb,
    onCatastrophicError: options.onCatastrophicError,
  });
  // Leaving the cache (evicted, replaced by a new revision, or cleared) releases a parser's handles.
  const parsers = new LRUCache<string, ParserEntry>({
    max: options.maxContexts,
    dispose: (entry) => releaseParser(entry),
  });
  let seenCpuNs = isolate.cpuTime;

  /** Runs `work` in the isolate and adds the time it ran to the environment's account. */
  function timed<T>(work: () => T): T {
    const startedNs = process.hrtime.bigint();
    try {
      return work();
    } finally {
      if (isolate.isDisposed) {
        // V8 disposed it during the call (memory limit): its own count went with it.
        account.cpuMs += Number(process.hrtime.bigint() - startedNs) / 1e6;
      } else {
        const cpuNs = isolate.cpuTime;
        account.cpuMs += Number(cpuNs - seenCpuNs) / 1e6;
        seenCpuNs = cpuNs;
      }
    }
  }

  const harness = timed(() => isolate.compileScriptSync(HARNESS_SOURCE, { filename: HARNESS_FILENAME }));

  return {
    env: options.env,
    isDisposed: () => isolate.isDisposed,
    parser(code) {
      const cached = parsers.get(code.id);
      if (cached !== undefined && isCompiledFrom(cached, code)) return cached;
      if (cached !== undefined) parsers.delete(code.id);
      const entry = timed(() => compileParser(isolate, harness, code, limits));
      account.compiles += 1;
      // A memory failure while loading may be the heap's fault rather than this parser's: retry it next time.
      if (entry.kind === 'ready' || entry.failure.code !== 'PARSER_MEMORY') parsers.set(code.id, entry);
      return entry;
    },
    call: (entry, inputs, expectObject, timeoutMs) =>
      timed(() => callParser(entry, inputs, expectObject, timeoutMs)),
    contexts: () => parsers.size,
    heapBytes() {
      const heap = isolate.getHeapStatisticsSync();
      return { used: heap.used_heap_size + heap.externally_allocated_size, total: heap.total_heap_size };
    },
    dispose() {
      parsers.clear();
      if (!isolate.isDisposed) isolate.dispose();
    },
  };
}
