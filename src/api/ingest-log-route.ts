/**
 * `GET /ingest/log` (docs/interface.md#ingest-log): the environment's latest ingestion outcomes, newest first,
 * at most `limit` (default and maximum: VIGIL_INGEST_LOG_SIZE).
 */
import { apiRoute, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';

export function ingestLogRoutes(deps: ApiDeps): ApiRoute[] {
  const size = deps.config.ingestLogSize;
  return [
    apiRoute({
      paths: ['/ingest/log'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        limit: attr
          .number({ integer: true, min: 1, max: size })
          .optional()
          .meta({ description: 'Most entries returned; default: every entry kept.', default: size }),
      }),
      handle: async ({ env, attrs: { limit } }) => deps.ingestLog.list(env, limit ?? size),
    }),
  ];
}
