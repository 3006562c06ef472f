/**
 * Suspends a parser that keeps spending the whole CPU or memory limit: the sandbox runs parsers
 * with synchronous calls on the worker's thread, so a parser that loops or exhausts its heap on
 * every payload would take most of the worker's time from every other environment. After
 * `tripAfter` consecutive PARSER_TIMEOUT / PARSER_MEMORY failures its payloads fail at once with
 * the same code for `suspendMs`; the first payload after that runs again, and one more such
 * failure suspends it again at once. A success, another failure code or a new revision resets it.
 */
import { parseFailure, type ParseFailure, type ParseOutcome } from './outcome.ts';

export interface BreakerOptions {
  /** Consecutive limit failures that suspend a parser. */
  tripAfter: number;
  /** How long a suspended parser's payloads fail without running, in ms. */
  suspendMs: number;
  clock?: () => number;
}

interface ParserRecord {
  revision: number;
  consecutive: number;
  suspendedUntilMs: number;
  failure?: ParseFailure;
}

export interface ParserBreaker {
  /** The failure to answer without running while the parser is suspended, else undefined. */
  suspended(id: string, revision: number): ParseFailure | undefined;
  /** Counts the outcomes of one call, in input order; returns true when they suspended the parser. */
  record(id: string, revision: number, outcomes: readonly ParseOutcome[]): boolean;
}

const isLimitFailure = (o: ParseOutcome): o is ParseFailure =>
  !o.ok && (o.code === 'PARSER_TIMEOUT' || o.code === 'PARSER_MEMORY');

export function createParserBreaker(options: BreakerOptions): ParserBreaker {
  const clock = options.clock ?? Date.now;
  const parsers = new Map<string, ParserRecord>();
  const recordOf = (id: string, revision: number): ParserRecord => {
    const known = parsers.get(id);
    if (known?.revision === revision) return known;
    const fresh: ParserRecord = { revision, consecutive: 0, suspendedUntilMs: 0 };
    parsers.set(id, fresh);
    return fresh;
  };
  return {
    suspended(id, revision) {
      const r = parsers.get(id);
      if (r?.revision !== revision || r.failure === undefined || clock() >= r.suspendedUntilMs)
        return undefined;
      return r.failure;
    },
    record(id, revision, outcomes) {
      const r = recordOf(id, revision);
      let tripped = false;
      for (const o of outcomes) {
        if (!isLimitFailure(o)) {
          r.consecutive = 0;
          continue;
        }
        r.consecutive += 1;
        if (r.consecutive < options.tripAfter) continue;
        r.suspendedUntilMs = clock() + options.suspendMs;
        r.failure = parseFailure(
          o.code,
          `${o.message}; suspended for ${Math.ceil(options.suspendMs / 1000)} s after ${options.tripAfter} such failures in a row`,
        );
        // One more limit failure after the suspension suspends it again.
        r.consecutive = options.tripAfter - 1;
        tripped = true;
      }
      return tripped;
    },
  };
}
