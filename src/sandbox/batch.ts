import type { ReadyParser } from './parser-context.ts';
import type { ParserInput } from './parser-code.ts';

/** Runs one batch in the parser's context and returns the harness's raw answer (a JSON string, unchecked). */
export function callParser(
  entry: ReadyParser,
  inputs: readonly ParserInput[],
  expectObject: boolean,
  timeoutMs: number,
): unknown {
  // One string in, one string out: a single crossing per batch, whatever its size. An input is
  // its payloadStr alone when payloadRaw is the same (the common case, which then carries neither
  // every payload twice nor a list per input), else [payloadStr, payloadRaw].
  const rows = inputs.map(({ payloadStr, payloadRaw }) =>
    payloadRaw === payloadStr ? payloadStr : [payloadStr, payloadRaw],
  );
  return entry.runBatch.applySync(undefined, [JSON.stringify(rows), expectObject], { timeout: timeoutMs });
}

/** Splits a batch so that no call carries more than `maxChars` characters of payload. */
export function chunksBySize(inputs: readonly ParserInput[], maxChars: number): (readonly ParserInput[])[] {
  const chunks: (readonly ParserInput[])[] = [];
  let start = 0;
  let size = 0;
  inputs.forEach(({ payloadStr, payloadRaw }, index) => {
    const length = payloadStr.length + (payloadRaw === payloadStr ? 0 : payloadRaw.length);
    if (index > start && size + length > maxChars) {
      chunks.push(inputs.slice(start, index));
      start = index;
      size = 0;
    }
    size += length;
  });
  chunks.push(start === 0 ? inputs : inputs.slice(start));
  return chunks;
}
