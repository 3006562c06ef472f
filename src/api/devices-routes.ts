/**
 * Endpoints 1, 2 and 9: devices of the caller's environment (sorted by deviceName), devices of one
 * definition, and one device's events.
 */
import { AppError } from '../errors/app-error.ts';
import { listEvents } from '../events/list-events.ts';
import { readLastContacts } from '../state/read-state.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import { apiRoute, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';
import { EVENT_FILTERS, eventQuery } from './events-routes.ts';
import { labelsFilter } from './labels-filter.ts';
import { deviceShape } from './sensor-shapes.ts';

const byName = (a: DeviceRecord, b: DeviceRecord) =>
  a.deviceName < b.deviceName ? -1 : a.deviceName > b.deviceName ? 1 : 0;

export function deviceRoutes(deps: ApiDeps): ApiRoute[] {
  const { redis, keys, tenancy } = deps;

  async function shapeDevices(env: string, devices: DeviceRecord[]) {
    const sorted = [...devices].sort(byName);
    const contacts = await readLastContacts(
      redis,
      keys,
      env,
      sorted.map((d) => d.deviceName),
    );
    return sorted.map((d, i) => deviceShape(d, contacts[i] ?? null));
  }

  return [
    apiRoute({
      paths: ['/devices/list'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        labels: labelsFilter().optional(),
        limit: attr
          .number({ integer: true, min: 1, max: DEVICES_PAGE_MAX })
          .optional()
          .describe('Most devices answered: a page. Without limit and after, every device.'),
        after: attr
          .string()
          .optional()
          .describe('The page after this deviceName (the last of the page before).'),
      }),
      async handle({ env, attrs }) {
        const { labels, limit, after } = attrs;
        if (limit === undefined && after === undefined && labels === undefined)
          return shapeDevices(env, await tenancy.listDevices(env));
        const page = await tenancy.pageDevices(env, {
          limit: limit ?? DEVICES_PAGE_MAX,
          ...(after === undefined ? {} : { after }),
          ...(labels === undefined ? {} : { labels }),
        });
        return shapeDevices(env, page.devices);
      },
    }),
    apiRoute({
      paths: ['/devices/listByDefinitionName', '/devices/listByDefinitionNames'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        definitionName: attr.string(),
        definitionIsPublic: attr
          .boolean()
          .describe("true: the public definition of that name; false: the environment's private one."),
      }),
      async handle({ env, attrs: { definitionName, definitionIsPublic } }) {
        const [definition, devices] = await Promise.all([
          tenancy.getDefinition(env, definitionName, definitionIsPublic),
          tenancy.listDevices(env),
        ]);
        if (!definition) {
          throw new AppError(
            'DEFINITION_NOT_FOUND',
            `No ${definitionIsPublic ? 'public' : 'private'} definition ${definitionName}.`,
            { details: { definitionName } },
          );
        }
        const matching = devices.filter(
          (d) => d.definitionName === definitionName && d.definitionIsPublic === definitionIsPublic,
        );
        return shapeDevices(env, matching);
      },
    }),
    apiRoute({
      paths: ['/devices/events'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({ deviceName: attr.string(), ...EVENT_FILTERS }),
      async handle({ env, attrs: { deviceName, ...filters } }) {
        if (!(await tenancy.getDevice(env, deviceName))) throw deviceNotFound(deviceName);
        return listEvents(redis, keys, { ...eventQuery(env, filters), device: deviceName });
      },
    }),
  ];
}

/** Most devices of one page of `/devices/list`. */
export const DEVICES_PAGE_MAX = 10_000;

export const deviceNotFound = (deviceName: string) =>
  new AppError('DEVICE_NOT_FOUND', `No device ${deviceName}.`, { details: { deviceName } });
