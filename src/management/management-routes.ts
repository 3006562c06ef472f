/**
 * The management operations (src/management/) as routes of the API port: `POST /<resource>/<verb>`
 * with a JSON body (GET is 405), a bearer token whose scopes the operation needs, the envelope and
 * the error catalogue of the read API, each operation in the OpenAPI document.
 */
import { tokenActor } from '../audit/audit-log.ts';
import type { ApiRoute } from '../api/api-route.ts';
import type { Management } from './management.ts';

export function managementRoutes(management: Management): ApiRoute[] {
  return [...management.operations.values()].map((op) => ({
    paths: [op.path],
    methods: ['POST'],
    auth: true,
    scope: op.scope,
    attributes: op.attributes,
    answer: op.answer,
    ...(op.rawBody ? { rawBody: op.rawBody } : {}),
    handle: ({ token, attrs, nowMs, body }) => {
      // Routes with a scope always have a token (api-app.ts checks it before the handler).
      if (!token) throw new Error('a management route without a token');
      const caller = { env: token.env, actor: tokenActor(token), scopes: token.scopes, nowMs };
      return management.runValidated(op, caller, attrs, body);
    },
  }));
}
