/**
 * `POST /login/<API_KEY>` (docs/interface.md#login): username, password and, with MFA, a TOTP code give a
 * login token for the key's environment (VIGIL_LOGIN_TOKEN_TTL_SECONDS, 60 minutes by default).
 * The API key only selects the environment. Failures count towards the lockout (login.ts), by
 * username and by the client's address.
 */
import { z } from 'zod';
import { PUBLIC_DEMO_REFUSALS, publicDemoKeyCheck } from '../config/public-demo.ts';
import { AppError } from '../errors/app-error.ts';
import { apiRoute, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';

const CODE = 'a 6-digit code';

export function loginRoutes(deps: ApiDeps): ApiRoute[] {
  const isRefusedDemoKey = publicDemoKeyCheck(deps.config.demo);
  return [
    apiRoute({
      paths: ['/login/:apiKey'],
      methods: ['POST'],
      auth: false,
      scope: 'read',
      attributes: attributes({
        username: attr.string(),
        password: attr.string(),
        // A JSON body may carry the code as a number (123456, or 1234 for 001234).
        totp: z
          .union([attr.string(), z.int({ error: CODE }).min(0, { error: CODE })], { error: CODE })
          .optional()
          .describe('The current code, when the user has multi-factor authentication.'),
      }),
      async handle({ attrs: { username, password, totp: code }, nowMs, params, req }) {
        const totp = typeof code === 'number' ? String(code).padStart(6, '0') : code;
        if (isRefusedDemoKey(params.apiKey ?? ''))
          throw new AppError('INVALID_API_KEY', PUBLIC_DEMO_REFUSALS.apiKey);
        const apiKey = await deps.tenancy.resolveApiKey(params.apiKey ?? '');
        if (!apiKey) throw new AppError('INVALID_API_KEY', 'The API key is unknown or revoked.');
        const result = await deps.tenancy.verifyLogin({
          env: apiKey.env,
          username,
          password,
          totp,
          // The socket's peer, or X-Forwarded-For as far as VIGIL_TRUST_PROXY allows.
          clientAddress: req.ip ?? '',
          nowMs,
        });
        if (!result.ok) {
          const messages = {
            INVALID_CREDENTIALS: 'Wrong username, password or code.',
            MFA_REQUIRED: 'This user has multi-factor authentication: send totp.',
            LOGIN_LOCKED: 'Too many failed logins; try again later.',
            ACCOUNT_DISABLED: 'This user is disabled; an administrator of the environment can enable it.',
          } as const;
          throw new AppError(result.code, result.message ?? messages[result.code], {
            ...(result.retryAfterSeconds === undefined
              ? {}
              : { retryAfterSeconds: result.retryAfterSeconds }),
          });
        }
        deps.log.info({ env: apiKey.env, username }, 'login');
        return deps.tenancy.createLoginToken(
          apiKey.env,
          username,
          deps.config.loginTokenTtlSeconds,
          result.generation,
        );
      },
    }),
  ];
}
