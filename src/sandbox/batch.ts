import { AppError } from '../errors/app-error.ts';
import type { ReadyParser } from './parser-context.ts';
import type { ParserFormat, ParserInput, PayloadInput, Uplink, UplinkInput } from './parser-code.ts';

/** Runs one batch in the parser's context and returns the harness's raw answer (a JSON string, unchecked). */
export function callParser(
  entry: ReadyParser,
  inputs: readonly ParserInput[],
  expectObject: boolean,
  timeoutMs: number,
): unknown {
  // One string in, one string out: a single crossing per batch, whatever its size. An input is
  // its payloadStr alone when payloadRaw is the same (the common case, which then carries neither
  // every payload twice nor a list per input), else [payloadStr, payloadRaw]. An uplink is
  // [bytesHex, fPort, recvTimeMs]. checkInputs has made sure each input is of the parser's format.
  const rows =
    entry.format === 'ts013'
      ? (inputs as readonly UplinkInput[]).map(({ uplink }) => [
          uplink.bytesHex,
          uplink.fPort,
          uplink.recvTimeMs,
        ])
      : (inputs as readonly PayloadInput[]).map(({ payloadStr, payloadRaw }) =>
          payloadRaw === payloadStr ? payloadStr : [payloadStr, payloadRaw],
        );
  return entry.runBatch.applySync(undefined, [JSON.stringify(rows), expectObject], { timeout: timeoutMs });
}

// An uplink's row beside its hex digits: two numbers of up to 16 characters, brackets, quotes, commas.
const UPLINK_ROW_CHARS = 40;

/** Splits a batch so that no call carries more than `maxChars` characters of payload. */
export function chunksBySize(inputs: readonly ParserInput[], maxChars: number): (readonly ParserInput[])[] {
  const chunks: (readonly ParserInput[])[] = [];
  let start = 0;
  let size = 0;
  inputs.forEach((input, index) => {
    const length = charsOf(input);
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

function charsOf(input: ParserInput): number {
  if ('uplink' in input) return input.uplink.bytesHex.length + UPLINK_ROW_CHARS;
  const { payloadStr, payloadRaw } = input;
  return payloadStr.length + (payloadRaw === payloadStr ? 0 : payloadRaw.length);
}

/**
 * Refuses a batch with an input the parser's format cannot take: a codec takes uplinks with hex
 * bytes, an integer fPort 0–255 and a receive time a Date can hold; a parsePayload parser takes
 * payloads. Such an input is the caller's mistake, not the parser's: it throws INTERNAL.
 */
export function checkInputs(format: ParserFormat | undefined, inputs: readonly ParserInput[]): void {
  const codec = format === 'ts013';
  inputs.forEach((input, index) => {
    const problem = codec ? uplinkProblem(input) : 'uplink' in input ? 'is an uplink' : undefined;
    if (problem !== undefined) {
      const parser = codec ? 'a ts013 codec' : 'a parsePayload parser';
      throw new AppError('INTERNAL', `input ${index} for ${parser} ${problem}`);
    }
  });
}

const HEX_BYTES = /^(?:[0-9a-fA-F]{2})*$/;
// The largest distance from the epoch a Date holds, in ms.
const MAX_DATE_MS = 8.64e15;

function uplinkProblem(input: ParserInput): string | undefined {
  if (!('uplink' in input)) return 'is not an uplink';
  // Typed, but JavaScript callers and casts may hand anything.
  const { bytesHex, fPort, recvTimeMs } = input.uplink as { [K in keyof Uplink]?: unknown };
  if (typeof bytesHex !== 'string' || !HEX_BYTES.test(bytesHex)) return 'has bytesHex that are not hex bytes';
  if (typeof fPort !== 'number' || !Number.isInteger(fPort) || fPort < 0 || fPort > 255) {
    return 'has an fPort that is not an integer 0–255';
  }
  if (typeof recvTimeMs !== 'number' || !(Math.abs(recvTimeMs) <= MAX_DATE_MS)) {
    return 'has a recvTimeMs that is not a time in ms';
  }
  return undefined;
}
