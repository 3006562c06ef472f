/**
 * The `vigil` command's remote mode: a running Vigil's API over HTTP with a bearer token, so that an
 * operator manages from a laptop with neither Vigil's settings nor a way to its Redis. Every
 * command within an environment sends what its direct mode runs in process — the same management
 * operation, the same attributes — and gets the same answer or error back (the catalogue's code,
 * the message, the details).
 */
import { AppError } from '../errors/app-error.ts';
import { ERROR_CODES, type ErrorCode } from '../errors/catalogue.ts';
import type { RawBody } from '../management/operation.ts';

/** Where the remote Vigil is, and the token to use there. */
export interface RemoteTarget {
  /** The API's base address, e.g. https://vigil.example.com or http://127.0.0.1:8080. */
  url: string;
  token: string;
  /** Where the two came from, for messages: `--url`, VIGIL_URL, a profile's name… */
  source: string;
}

/** Longest wait for one answer, in ms: an import of 100,000 devices takes seconds, not minutes. */
const ANSWER_TIMEOUT_MS = 120_000;

/** POSTs `input` (or `body`) to `path` and resolves to the envelope's `data`. */
export async function callRemote<T>(
  target: RemoteTarget,
  path: string,
  input: Record<string, unknown>,
  body?: RawBody,
): Promise<T> {
  const url = new URL(path.replace(/^\//, ''), target.url.endsWith('/') ? target.url : `${target.url}/`);
  // An operation with a body of its own takes its attributes from the query string (dryRun=true).
  if (body)
    for (const [k, v] of Object.entries(input))
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
        url.searchParams.set(k, String(v));
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${target.token}`,
        'content-type': body?.contentType ?? 'application/json',
        accept: 'application/json',
      },
      body: body ? body.text : JSON.stringify(input),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
  } catch (err) {
    throw new AppError(
      'UNAVAILABLE',
      `cannot reach Vigil at ${target.url} (${target.source}): ${reasonOf(err)}`,
      {
        cause: err,
      },
    );
  }
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('text/csv') && res.ok) return text as T;
  const answer = parse(text);
  if (res.ok && answer?.status === 'success') return answer.data as T;
  throw remoteError(res.status, answer, target);
}

interface Envelope {
  status?: string;
  data?: unknown;
  error?: { code?: string; message?: string } & Record<string, unknown>;
}

function parse(text: string): Envelope | undefined {
  try {
    return JSON.parse(text) as Envelope;
  } catch {
    return undefined;
  }
}

/** The answer's error as an AppError of its code; one the catalogue does not know is INTERNAL. */
function remoteError(status: number, answer: Envelope | undefined, target: RemoteTarget): AppError {
  const { code, message, ...details } = answer?.error ?? {};
  const known = code !== undefined && code in ERROR_CODES;
  if (!known)
    return new AppError(
      'INTERNAL',
      `${target.url} answered ${status} without an error Vigil knows${code ? ` (${code})` : ''}`,
    );
  const hint =
    code === 'UNAUTHORIZED' ? ` (the token of ${target.source} is unknown, expired or revoked)` : '';
  return new AppError(code as ErrorCode, `${message ?? code}${hint}`, { details });
}

function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
