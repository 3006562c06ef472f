import { ERROR_CODES, type ErrorCode } from './catalogue.ts';

export interface AppErrorOptions {
  cause?: unknown;
  /** Overrides the catalogue's retry decision. */
  retryable?: boolean;
  /** Seconds for a Retry-After header. */
  retryAfterSeconds?: number;
  /** Extra fields for the error envelope (e.g. the attribute that is missing). */
  details?: Record<string, unknown>;
}

/** The one error type of Vigil: a stable code, an HTTP status, a retry decision and a cause. */
export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const entry = ERROR_CODES[code];
    this.code = code;
    this.status = entry.status;
    this.retryable = options.retryable ?? entry.retryable;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.details = options.details;
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;

/** The error envelope shared by the gateway and the read API. */
export function errorBody(code: ErrorCode, message: string, details?: Record<string, unknown>) {
  return { status: 'error' as const, error: { code, message, ...details } };
}
