/**
 * Sign-in and sign-out. Sign-in checks the credentials with the same lockout as the JSON login
 * (verifyLogin: per username and address, username, address), after a throttle of attempts per
 * client address (each attempt costs a password hash); a success starts a server-side session.
 * Wrong credentials say only that. Sign-out ends the session on the server and its live streams.
 */
import type { Request, Response, Router } from 'express';
import { AppError, isAppError } from '../errors/app-error.ts';
import type { LoginResult } from '../tenancy/login.ts';
import { isValidName } from '../tenancy/names.ts';
import type { ConsoleContext } from './console-context.ts';
import { assertSameOrigin, assertToken, countSignIn, newToken } from './security.ts';
import { paths } from './views/format.ts';
import { signInBody, type SignInModel } from './views/sign-in-view.ts';

const invalidCredentials: LoginResult = { ok: false, code: 'INVALID_CREDENTIALS' };

const MESSAGES = {
  INVALID_CREDENTIALS: 'Wrong environment, username, password or code.',
  MFA_REQUIRED:
    'This account uses multi-factor authentication: enter the code from your app, and your password again.',
  LOGIN_LOCKED: 'Too many failed sign-ins for this account: try again later.',
  ACCOUNT_DISABLED: 'This account is disabled: ask an administrator of the environment to enable it.',
} as const;

export function signInRoutes(router: Router, ctx: ConsoleContext): void {
  const { cookies, sessions, deps } = ctx;

  /** The sign-in form, with a fresh anti-forgery cookie when the browser has none. */
  function showForm(req: Request, res: Response, status: number, m: Omit<SignInModel, 'csrf'>): void {
    let token = cookies.read(req, cookies.signInName(req));
    if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) {
      token = newToken();
      cookies.set(req, res, cookies.signInName(req), token);
    }
    ctx.render(res, status, { title: 'Sign in', body: signInBody({ ...m, csrf: token }) });
  }

  router.get('/sign-in', async (req, res) => {
    if (await ctx.sessionOf(req, { renew: false })) {
      res.redirect(303, paths.fleet);
      return;
    }
    const q = ctx.queryOf(req);
    showForm(req, res, 200, {
      env: '',
      username: '',
      next: safeNext(q.get('next')),
      signedOut: q.has('signed-out'),
    });
  });

  router.post('/sign-in', async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const field = (name: string): string => {
      const v = body[name];
      return typeof v === 'string' ? v : '';
    };
    const env = field('env').trim().toLowerCase();
    const username = field('username').trim();
    const next = safeNext(field('next'));
    const again = (status: number, error: string, askCode = false) =>
      showForm(req, res, status, { env, username, error, askCode, next });
    try {
      assertSameOrigin(req, deps.config.publicUrl);
      assertToken(req, cookies.read(req, cookies.signInName(req)) ?? '');
      const clientAddress = req.ip ?? '';
      await countSignIn(deps.redis, deps.keys, clientAddress, deps.config.consoleSignInPerMinute);
      // An environment that cannot exist is answered as wrong credentials, without a Redis key of it.
      const result = isValidName('environment', env)
        ? await deps.tenancy.verifyLogin({
            env,
            username,
            password: field('password'),
            totp: field('code').trim(),
            clientAddress,
            nowMs: ctx.clock(),
          })
        : invalidCredentials;
      if (!result.ok) {
        if (result.retryAfterSeconds !== undefined)
          res.setHeader('Retry-After', String(result.retryAfterSeconds));
        const status = result.code === 'LOGIN_LOCKED' ? 429 : 401;
        again(status, result.message ?? MESSAGES[result.code], result.code === 'MFA_REQUIRED');
        return;
      }
      const { cookie } = await sessions.create(env, username, ctx.clock(), result.generation);
      cookies.set(req, res, cookies.sessionName(req), cookie);
      cookies.clear(req, res, cookies.signInName(req));
      deps.log.info({ env, username, via: 'console' }, 'login');
      res.redirect(303, next ?? paths.fleet);
    } catch (err) {
      if (isAppError(err) && (err.code === 'SIGN_IN_THROTTLED' || err.code === 'CSRF_REJECTED')) {
        if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
        again(err.status, err.message);
        return;
      }
      throw err;
    }
  });

  router.post('/sign-out', async (req, res) => {
    assertSameOrigin(req, deps.config.publicUrl);
    const session = await ctx.sessionOf(req, { renew: false });
    if (session) {
      assertToken(req, session.csrf);
      await sessions.destroy(session);
      ctx.live.endSession(session.secretHash);
    }
    cookies.clear(req, res, cookies.sessionName(req));
    res.redirect(303, `${paths.signIn}?signed-out`);
  });
}

/** A console path to return to after sign-in; anything else (another site, `//host`) is dropped. */
function safeNext(next: string | null): string | undefined {
  if (!next || !next.startsWith('/console/') || next.startsWith('/console//') || /[\\\s]/.test(next))
    return undefined;
  return next;
}

export const unauthorized = () => new AppError('UNAUTHORIZED', 'Your session has ended: sign in again.');
