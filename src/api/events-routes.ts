/**
 * Endpoint 8 (every event of the environment, newest first, optionally of the devices with given
 * labels) and the request attributes the event listings share: limit, startUTC/endUTC (UNIX
 * seconds on receivedUTC, [start, end)), eventCategory and eventStatus.
 */
import type { z } from 'zod';
import { STATUSES } from '../domain/types.ts';
import { listEvents, type EventQuery } from '../events/list-events.ts';
import { apiRoute, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';
import { labelsFilter } from './labels-filter.ts';
import { devicesWithLabels } from '../tenancy/tenancy-store.ts';

export const EVENTS_DEFAULT_LIMIT = 1000;
export const EVENTS_MAX_LIMIT = 10_000;

/** The filters of an events listing, all optional. */
export const EVENT_FILTERS = {
  limit: attr.number({ integer: true, min: 1, max: EVENTS_MAX_LIMIT }).optional().meta({
    description: 'Most events returned, counting those that pass the filters.',
    default: EVENTS_DEFAULT_LIMIT,
  }),
  startUTC: attr.number({ min: 0 }).optional().describe('UNIX seconds, inclusive, on receivedUTC.'),
  endUTC: attr.number({ min: 0 }).optional().describe('UNIX seconds, exclusive, on receivedUTC.'),
  eventCategory: attr.oneOf(['Sensors', 'Availability']).optional(),
  eventStatus: attr.oneOf(STATUSES).optional(),
};
type EventFilters = z.output<z.ZodObject<typeof EVENT_FILTERS>>;

/** The listing query of an events request. */
export function eventQuery(env: string, filters: EventFilters): EventQuery {
  const { limit, startUTC, endUTC, eventCategory, eventStatus } = filters;
  return {
    env,
    limit: limit ?? EVENTS_DEFAULT_LIMIT,
    startMs: startUTC === undefined ? undefined : Math.round(startUTC * 1000),
    endMs: endUTC === undefined ? undefined : Math.round(endUTC * 1000),
    eventCategory,
    eventStatus,
  };
}

export function eventRoutes(deps: ApiDeps): ApiRoute[] {
  return [
    apiRoute({
      paths: ['/events/list'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        ...EVENT_FILTERS,
        labels: labelsFilter()
          .optional()
          .describe(
            'Only events of the devices that have every one of these labels now, e.g. {"site":"amsterdam"} or site=amsterdam.',
          ),
      }),
      handle: async ({ env, attrs: { labels, ...filters } }) => {
        const query = eventQuery(env, filters);
        if (labels === undefined || Object.keys(labels).length === 0)
          return listEvents(deps.redis, deps.keys, query);
        const devices = await devicesWithLabels(deps.tenancy, env, labels);
        return listEvents(deps.redis, deps.keys, { ...query, devices });
      },
    }),
  ];
}
