/**
 * The console's protections: its Content-Security-Policy (scripts and styles from Vigil only, no
 * inline code), its cookies (HttpOnly, SameSite=Strict, Secure over https), its defence against
 * cross-site request forgery (the request's Origin must be the console's own, and a state-changing
 * request must carry its session's synchronizer token — or, for the sign-in form, the token of a
 * cookie set with the form), and the throttle of sign-in attempts per client address.
 */
import { randomBytes } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import { parse as parseCookies, serialize } from 'cookie';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import { addressGroup } from '../tenancy/login.ts';
import { safeEqual } from '../tenancy/secrets.ts';
import type { ConsoleKeys } from './console-keys.ts';

/** Pages: only Vigil's own scripts, styles and connections; no frames, no plugins, no inline code. */
export const consoleSecurityHeaders: RequestHandler = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
  },
  strictTransportSecurity: false,
  referrerPolicy: { policy: 'same-origin' },
});

export interface CookiePolicy {
  /** The session cookie's name (`__Host-` prefixed when Secure). */
  sessionName(req: Request): string;
  signInName(req: Request): string;
  /** The cookie of a message shown once on the next page (manage-forms.ts). */
  flashName(req: Request): string;
  read(req: Request, name: string): string | undefined;
  set(req: Request, res: Response, name: string, value: string, maxAgeSeconds?: number): void;
  clear(req: Request, res: Response, name: string): void;
  /** Whether the console is served over https (VIGIL_PUBLIC_URL, or the request as trusted). */
  isSecure(req: Request): boolean;
}

export function createCookiePolicy(publicUrl: string | undefined): CookiePolicy {
  const isSecure = (req: Request) => (publicUrl ? publicUrl.startsWith('https:') : req.secure);
  const prefixed = (req: Request, name: string) => (isSecure(req) ? `__Host-${name}` : name);
  const options = (req: Request, maxAgeSeconds: number | undefined) => ({
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: isSecure(req),
    path: '/',
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  });
  return {
    isSecure,
    sessionName: (req) => prefixed(req, 'vigil_session'),
    signInName: (req) => prefixed(req, 'vigil_sign_in'),
    flashName: (req) => prefixed(req, 'vigil_flash'),
    read(req, name) {
      const header = req.headers.cookie;
      return header ? parseCookies(header)[name] : undefined;
    },
    set(req, res, name, value, maxAgeSeconds) {
      res.append('Set-Cookie', serialize(name, value, options(req, maxAgeSeconds)));
    },
    clear(req, res, name) {
      res.append('Set-Cookie', serialize(name, '', { ...options(req, 0), expires: new Date(0) }));
    },
  };
}

/**
 * Refuses a request that a browser sent from another site: an Origin that is not the console's, or
 * Sec-Fetch-Site cross-site/same-site. Requests without either (not from a browser) go on to the
 * token check.
 */
export function assertSameOrigin(req: Request, publicUrl: string | undefined): void {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') throw csrfRejected();
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const expected = publicUrl ? new URL(publicUrl).origin : `${req.protocol}://${req.headers.host ?? ''}`;
  if (origin !== expected) throw csrfRejected();
}

/** Refuses a state-changing request without the expected token (body `_csrf` or X-CSRF-Token). */
export function assertToken(req: Request, expected: string): void {
  const body = req.body as Record<string, unknown> | undefined;
  const sent = typeof body?._csrf === 'string' ? body._csrf : req.headers['x-csrf-token'];
  if (typeof sent !== 'string' || sent === '' || !safeEqual(sent, expected)) throw csrfRejected();
}

const csrfRejected = () =>
  new AppError('CSRF_REJECTED', 'This form came from another site, or has expired: reload the page and try again.');

export const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * Counts a sign-in attempt of the client's address; SIGN_IN_THROTTLED beyond `perMinute` within
 * the minute that began with its first attempt.
 */
export async function countSignIn(
  redis: Redis,
  keys: ConsoleKeys,
  clientAddress: string,
  perMinute: number,
): Promise<void> {
  const key = keys.consoleSignIns(addressGroup(clientAddress));
  const [[, count] = [null, 0], [, ttl] = [null, -1]] =
    ((await redis.multi().incr(key).pttl(key).exec()) as [Error | null, number][] | null) ?? [];
  if (ttl < 0) await redis.pexpire(key, 60_000);
  if (count > perMinute) {
    throw new AppError('SIGN_IN_THROTTLED', 'Too many sign-in attempts from your address: wait a minute and try again.', {
      retryAfterSeconds: Math.max(1, Math.ceil((ttl < 0 ? 60_000 : ttl) / 1000)),
    });
  }
}
