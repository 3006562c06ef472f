/**
 * Endpoint 8 (every event of the environment, newest first) and the request attributes the event
 * listings share: limit, startUTC/endUTC (UNIX seconds on receivedUTC, [start, end)),
 * eventCategory and eventStatus.
 */
import { STATUSES } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { listEvents, type EventQuery } from '../events/list-events.ts';
import type { ApiDeps, ApiRoute } from './api-route.ts';
import { readNumber, readString, type Attributes } from './request-params.ts';

export const EVENTS_DEFAULT_LIMIT = 1000;
export const EVENTS_MAX_LIMIT = 10_000;
const CATEGORIES = ['Sensors', 'Availability'];

/** The listing attributes of an events request. */
export function eventQuery(env: string, attrs: Attributes): EventQuery {
  const limit = readNumber(attrs, 'limit', { integer: true, min: 1, max: EVENTS_MAX_LIMIT });
  const startUTC = readNumber(attrs, 'startUTC', { min: 0 });
  const endUTC = readNumber(attrs, 'endUTC', { min: 0 });
  const eventCategory = readString(attrs, 'eventCategory', { optional: true });
  const eventStatus = readString(attrs, 'eventStatus', { optional: true });
  if (eventCategory !== undefined && !CATEGORIES.includes(eventCategory))
    throw invalid('eventCategory', `one of ${CATEGORIES.join(', ')}`);
  if (eventStatus !== undefined && !(STATUSES as readonly string[]).includes(eventStatus))
    throw invalid('eventStatus', `one of ${STATUSES.join(', ')}`);
  return {
    env,
    limit: limit ?? EVENTS_DEFAULT_LIMIT,
    startMs: startUTC === undefined ? undefined : Math.round(startUTC * 1000),
    endMs: endUTC === undefined ? undefined : Math.round(endUTC * 1000),
    eventCategory,
    eventStatus,
  };
}

const invalid = (attribute: string, expected: string) =>
  new AppError('INVALID_ATTRIBUTE', `The attribute ${attribute} must be ${expected}.`, {
    details: { attribute },
  });

export function eventRoutes(deps: ApiDeps): ApiRoute[] {
  return [
    {
      paths: ['/events/list'],
      methods: ['GET', 'POST'],
      auth: true,
      handle: async ({ env, attrs }) => listEvents(deps.redis, deps.keys, eventQuery(env, attrs)),
    },
  ];
}
