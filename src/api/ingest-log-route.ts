/**
 * `GET /ingest/log` (PRODUCT.md §10): the environment's latest ingestion outcomes, newest first,
 * at most `limit` (default and maximum: VIGIL_INGEST_LOG_SIZE).
 */
import type { ApiDeps, ApiRoute } from './api-route.ts';
import { readNumber } from './request-params.ts';

export function ingestLogRoutes(deps: ApiDeps): ApiRoute[] {
  const size = deps.config.ingestLogSize;
  return [
    {
      paths: ['/ingest/log'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs }) {
        const limit = readNumber(attrs, 'limit', { integer: true, min: 1, max: size }) ?? size;
        return deps.ingestLog.list(env, limit);
      },
    },
  ];
}
