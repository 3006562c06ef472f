import type ivm from 'isolated-vm';
import { describeUserError, isMemoryLimit, isTimeout } from './host-errors.ts';
import { parseFailure, type ParseFailure } from './outcome.ts';
import type { ParserCode, ParserFormat } from './parser-code.ts';

/** The batch entry point the harness returns: one JSON string of inputs in, one JSON string of outcomes out. */
export type RunBatch = (inputJson: string, expectObject: boolean) => string;
type Install = (filename: string, maxResultChars: number, format: ParserFormat) => RunBatch;

/** A parser compiled into its own context, ready to run batches. */
export interface ReadyParser {
  kind: 'ready';
  revision: number;
  format: ParserFormat;
  context: ivm.Context;
  runBatch: ivm.Reference<RunBatch>;
}

/** A parser revision that cannot run (syntax error, top-level failure, no parsePayload or decodeUplink): every input gets `failure`. */
export interface BrokenParser {
  kind: 'broken';
  revision: number;
  format: ParserFormat;
  failure: ParseFailure;
}

export type ParserEntry = ReadyParser | BrokenParser;

export interface CompileLimits {
  timeoutMs: number;
  memoryLimitMb: number;
  maxResultChars: number;
}

/** Used in messages when the caller names no file. */
export const DEFAULT_PARSER_FILENAME = 'parser.js';

/** Whether a cached entry was compiled from this revision of the code, in its format. */
export function isCompiledFrom(entry: ParserEntry, code: ParserCode): boolean {
  return entry.revision === code.revision && entry.format === (code.format ?? 'parsePayload');
}

/**
 * Builds a fresh context for one parser revision: the harness first (so it captures pristine
 * intrinsics), then the user's script under its own filename (so reported lines and columns are the
 * user's) as a classic script (sloppy unless it says 'use strict'), then `install`, which finds
 * parsePayload or, for a 'ts013' codec, decodeUplink. Top-level code runs under the same time limit as
 * a call. Never throws; a failure becomes a BrokenParser. After a memory failure the isolate is
 * disposed, which the caller must notice (`isolate.isDisposed`).
 */
export function compileParser(
  isolate: ivm.Isolate,
  harness: ivm.Script,
  code: ParserCode,
  limits: CompileLimits,
): ParserEntry {
  const filename = code.filename ?? DEFAULT_PARSER_FILENAME;
  const format = code.format ?? 'parsePayload';
  let context: ivm.Context | undefined;
  try {
    context = isolate.createContextSync();
    const install = harness.runSync(context, {
      reference: true,
      timeout: limits.timeoutMs,
    }) as ivm.Reference<Install>;
    const script = isolate.compileScriptSync(code.source, { filename });
    try {
      script.runSync(context, { timeout: limits.timeoutMs });
    } finally {
      script.release();
    }
    const runBatch: ivm.Reference<RunBatch> = install.applySync(
      undefined,
      [filename, limits.maxResultChars, format],
      {
        timeout: limits.timeoutMs,
        result: { reference: true },
      },
    );
    install.release();
    return { kind: 'ready', revision: code.revision, format, context, runBatch };
  } catch (err) {
    releaseQuietly(context);
    const failure = loadFailure(err, isolate, filename, limits);
    return { kind: 'broken', revision: code.revision, format, failure };
  }
}

/** Frees a parser's context; harmless on a disposed isolate. */
export function releaseParser(entry: ParserEntry): void {
  if (entry.kind === 'ready') {
    releaseQuietly(entry.runBatch);
    releaseQuietly(entry.context);
  }
}

function loadFailure(
  err: unknown,
  isolate: ivm.Isolate,
  filename: string,
  limits: CompileLimits,
): ParseFailure {
  if (isolate.isDisposed || isMemoryLimit(err)) {
    return parseFailure(
      'PARSER_MEMORY',
      `loading the parser went over the sandbox memory limit of ${limits.memoryLimitMb} MB`,
    );
  }
  if (isTimeout(err)) {
    return parseFailure(
      'PARSER_TIMEOUT',
      `the parser's top-level code ran longer than ${limits.timeoutMs} ms`,
    );
  }
  return parseFailure('PARSER_ERROR', describeUserError(err, filename));
}

function releaseQuietly(handle: { release(): void } | undefined): void {
  try {
    handle?.release();
  } catch {
    // Already released, or its isolate is gone: nothing left to free.
  }
}
