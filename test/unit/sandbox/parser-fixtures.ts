import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { onTestFinished } from 'vitest';
import {
  createSandbox,
  type ParserCode,
  type ParserInput,
  type SandboxOptions,
} from '../../../src/sandbox/sandbox.ts';

const FIXTURES = new URL('../../fixtures/parsers/', import.meta.url);
const CODECS = new URL('../../fixtures/codecs/', import.meta.url);

/** The environment of fixtures that name none. */
export const TEST_ENV = 'test';

/** A parser from test/fixtures/parsers, identified by its name unless an id is given. */
export function fixture(name: string, overrides: Partial<ParserCode> = {}): ParserCode {
  const filename = `${name}.js`;
  const source = readFileSync(new URL(filename, FIXTURES), 'utf8');
  return { env: TEST_ENV, id: `def:test:${name}`, revision: 1, source, filename, ...overrides };
}

export function inline(id: string, source: string, revision = 1, env = TEST_ENV): ParserCode {
  return { env, id, revision, source, filename: `${id}.js` };
}

/** A TS013 codec from test/fixtures/codecs, identified by its name unless an id is given. */
export function codec(name: string, overrides: Partial<ParserCode> = {}): ParserCode {
  const filename = `${name}.js`;
  const source = readFileSync(new URL(filename, CODECS), 'utf8');
  return {
    env: TEST_ENV,
    id: `def:test:${name}`,
    revision: 1,
    source,
    filename,
    format: 'ts013',
    ...overrides,
  };
}

/** A TS013 codec written in the test. */
export function inlineCodec(id: string, source: string, env = TEST_ENV): ParserCode {
  return { ...inline(id, source, 1, env), format: 'ts013' };
}

/** 2024-09-23T10:37:23.874Z, the receive time of uplinks that name none. */
export const RECEIVED_MS = 1727087843874;

/** One uplink of `bytesHex` (spaces allowed, for legibility) on `fPort`. */
export function uplink(bytesHex: string, fPort: number, recvTimeMs = RECEIVED_MS): ParserInput {
  return { uplink: { bytesHex: bytesHex.replaceAll(' ', ''), fPort, recvTimeMs } };
}

/** One input whose payloadStr and payloadRaw are both `body` (an object is JSON-encoded). */
export function input(body: unknown): ParserInput {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { payloadStr: text, payloadRaw: text };
}

export const silentLog = pino({ level: 'silent' });

/** A sandbox with test-friendly limits, closed when the test ends. */
export function testSandbox(options: Partial<SandboxOptions> = {}) {
  const sandbox = createSandbox({ timeoutMs: 50, memoryLimitMb: 32, log: silentLog, ...options });
  onTestFinished(() => sandbox.close());
  return sandbox;
}
