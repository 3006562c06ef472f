/**
 * `POST /login/<API_KEY>` (PRODUCT.md §2): username, password and, with MFA, a TOTP code give a
 * login token for the key's environment (VIGIL_LOGIN_TOKEN_TTL_SECONDS, 60 minutes by default).
 * The API key only selects the environment. Failures count towards the lockout (login.ts), by
 * username and by the client's address.
 */
import { AppError } from '../errors/app-error.ts';
import type { ApiDeps, ApiRoute } from './api-route.ts';
import { readString } from './request-params.ts';

export function loginRoutes(deps: ApiDeps): ApiRoute[] {
  return [
    {
      paths: ['/login/:key'],
      methods: ['POST'],
      auth: false,
      async handle({ attrs, nowMs, params, clientAddress }) {
        const username = readString(attrs, 'username');
        const password = readString(attrs, 'password');
        const totp = readTotp(attrs.totp);
        const apiKey = await deps.tenancy.resolveApiKey(params.key ?? '');
        if (!apiKey) throw new AppError('INVALID_API_KEY', 'The API key is unknown or revoked.');
        const result = await deps.tenancy.verifyLogin({
          env: apiKey.env,
          username,
          password,
          totp,
          clientAddress,
          nowMs,
        });
        if (!result.ok) {
          const messages = {
            INVALID_CREDENTIALS: 'Wrong username, password or code.',
            MFA_REQUIRED: 'This user has multi-factor authentication: send totp.',
            LOGIN_LOCKED: 'Too many failed logins; try again later.',
          } as const;
          throw new AppError(result.code, messages[result.code], {
            ...(result.retryAfterSeconds === undefined
              ? {}
              : { retryAfterSeconds: result.retryAfterSeconds }),
          });
        }
        deps.log.info({ env: apiKey.env, username }, 'login');
        return deps.tenancy.createLoginToken(apiKey.env, username, deps.config.loginTokenTtlSeconds);
      },
    },
  ];
}

/** The TOTP code: text or a number (a JSON body may carry 123456); absent = none sent. */
function readTotp(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return String(v).padStart(6, '0');
  if (typeof v === 'string') return v;
  throw new AppError('INVALID_ATTRIBUTE', 'The attribute totp must be a 6-digit code.', {
    details: { attribute: 'totp' },
  });
}
