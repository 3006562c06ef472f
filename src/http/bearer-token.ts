import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors/app-error.ts';

/**
 * The token of `Authorization: Bearer <token>`: UNAUTHORIZED when there is none, BAD_REQUEST when
 * Authorization is given more than once (Node would keep the first silently, and a proxy in front
 * may have read another).
 */
export function bearerToken(req: IncomingMessage): string {
  if (authorizationLines(req.rawHeaders) > 1)
    throw new AppError('BAD_REQUEST', 'Send one Authorization header, not several.');
  const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  if (token === undefined) throw new AppError('UNAUTHORIZED', 'Send Authorization: Bearer <token>.');
  return token;
}

/**
 * How many Authorization lines the request's head has. Counted in the raw header list rather than
 * with `headersDistinct`, which builds an array for every header of the request to answer this.
 */
function authorizationLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name?.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  return count;
}
