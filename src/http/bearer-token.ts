import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors/app-error.ts';

/**
 * The token of `Authorization: Bearer <token>`: UNAUTHORIZED when there is none, BAD_REQUEST when
 * Authorization is given more than once (Node would keep the first silently, and a proxy in front
 * may have read another).
 */
export function bearerToken(req: IncomingMessage): string {
  const headers = req.headersDistinct.authorization;
  if (headers !== undefined && headers.length > 1)
    throw new AppError('BAD_REQUEST', 'Send one Authorization header, not several.');
  const token = /^Bearer\s+(\S+)\s*$/i.exec(headers?.[0] ?? '')?.[1];
  if (token === undefined) throw new AppError('UNAUTHORIZED', 'Send Authorization: Bearer <token>.');
  return token;
}
