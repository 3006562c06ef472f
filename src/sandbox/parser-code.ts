/** What the sandbox runs: a parser's code with its identity, and the inputs of one call. */

/** User code with its identity; a context is cached per (env, id, revision). */
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
}

export interface ParserInput {
  payloadStr: string;
  payloadRaw: string;
}
