/**
 * Endpoints 1, 2 and 9: devices of the caller's environment (sorted by deviceName), devices of one
 * definition, and one device's events.
 */
import { AppError } from '../errors/app-error.ts';
import { listEvents } from '../events/list-events.ts';
import { readLastContacts } from '../state/read-state.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { ApiDeps, ApiRoute } from './api-route.ts';
import { eventQuery } from './events-routes.ts';
import { readBoolean, readString } from './request-params.ts';
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
    {
      paths: ['/devices/list'],
      methods: ['GET', 'POST'],
      auth: true,
      handle: async ({ env }) => shapeDevices(env, await tenancy.listDevices(env)),
    },
    {
      paths: ['/devices/listByDefinitionName', '/devices/listByDefinitionNames'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs }) {
        const definitionName = readString(attrs, 'definitionName');
        const definitionIsPublic = readBoolean(attrs, 'definitionIsPublic');
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
    },
    {
      paths: ['/devices/events'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs }) {
        const deviceName = readString(attrs, 'deviceName');
        const query = eventQuery(env, attrs);
        if (!(await tenancy.getDevice(env, deviceName))) throw deviceNotFound(deviceName);
        return listEvents(redis, keys, { ...query, device: deviceName });
      },
    },
  ];
}

export const deviceNotFound = (deviceName: string) =>
  new AppError('DEVICE_NOT_FOUND', `No device ${deviceName}.`, { details: { deviceName } });
