/** What the sandbox runs: a parser's code with its identity, and the inputs of one call. */

import type { ParserFormat } from '../domain/types.ts';

export type { ParserFormat };

/** User code with its identity; a context is cached per (env, id, revision, format). */
export interface ParserCode {
  /**
   * The environment whose payloads this parser handles: its parsers run in that environment's own
   * isolate, never beside another environment's (a public definition gets a context per environment).
   */
  env: string;
  /** Cache identity within the environment, e.g. 'def:public:ComfortSensors' or 'pre:envname'. Different ids never share globals. */
  id: string;
  /** Changes whenever the source changes; a new revision replaces the cached context. */
  revision: number;
  source: string;
  /** The user's file name, used in stack traces and line:column messages. Default 'parser.js'. */
  filename?: string;
  /**
   * The function the source defines and how it is called. Default 'parsePayload'; a 'ts013' codec
   * takes `UplinkInput`s only. A change of format compiles the source afresh.
   */
  format?: ParserFormat;
}

/** A payload for `parsePayload(payloadStr, payloadRaw)`. */
export interface PayloadInput {
  payloadStr: string;
  payloadRaw: string;
}

/** One LoRaWAN uplink, as the network server received it. */
export interface Uplink {
  /** The frame's payload, two hex digits a byte (either case), no separators. */
  bytesHex: string;
  /** The frame's port, an integer 0–255. */
  fPort: number;
  /** When the network server received it, in epoch milliseconds. */
  recvTimeMs: number;
}

/**
 * An uplink for a TS013 codec: its `decodeUplink` receives `{bytes, fPort, recvTime}`, `bytes` a
 * plain Array of the codec's own context and `recvTime` a Date.
 */
export interface UplinkInput {
  uplink: Uplink;
}

/** One input of a call: a `PayloadInput` for a parsePayload parser, an `UplinkInput` for a ts013 codec. */
export type ParserInput = PayloadInput | UplinkInput;

/** The name of the function a format's source must define, as messages say it. */
export function entryPointOf(format: ParserFormat | undefined): 'parsePayload' | 'decodeUplink' {
  return format === 'ts013' ? 'decodeUplink' : 'parsePayload';
}
