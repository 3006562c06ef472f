/**
 * LoRaWAN network servers end to end: The Things Stack webhooks and ChirpStack HTTP integration
 * events posted to the real gateway, decoded by a TS013 codec in the real worker's sandbox, stored,
 * and read back through the read API and InfluxDB.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPointSpec, DefinitionSpec } from '../../src/domain/types.ts';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil } from '../../src/main.ts';
import { eventually } from '../support/eventually.ts';
import {
  chirpstackJoin,
  chirpstackLog,
  chirpstackStatus,
  chirpstackUp,
  ttsJoinAccept,
  ttsUplink,
} from '../../scripts/lib/network-messages.ts';
import { call, startApiHarness, type ApiHarness, type CallResult } from './api-harness.ts';

/**
 * A codec in the Payload Codec API form, as a vendor ships it: port 2 carries temperature (int16
 * big-endian, hundredths of °C), humidity (half percent) and battery (percent); a low battery is a
 * warning; any other port an error. Sloppy mode: it assigns an undeclared variable.
 */
const CODEC = `
function decodeUplink(input) {
  if (input.fPort !== 2) return { errors: ['unknown fPort ' + input.fPort] };
  var b = input.bytes;
  raw = (b[0] << 8) | b[1];
  var temperature = (raw > 0x7fff ? raw - 0x10000 : raw) / 100;
  var warnings = [];
  if (b[3] < 10) warnings.push('battery low: ' + b[3] + '%');
  return {
    data: { temperature: temperature, humidity: b[2] / 2, device: { battery: b[3], bytes: b.length } },
    warnings: warnings,
  };
}`;

const point = (
  name: string,
  dataType: DataPointSpec['dataType'],
  extra: Partial<DataPointSpec> = {},
): DataPointSpec => ({
  name,
  displayName: name,
  dataType,
  hysteresis: 0,
  thresholds: [],
  ...extra,
});

const CLIMATE: DefinitionSpec = {
  name: 'ClimateNode',
  manufacturer: 'Vigil tests',
  version: '1.0',
  parserFormat: 'ts013',
  dataPoints: [
    point('temperature', 'temperature', { thresholds: [{ status: 'WARNING', above: 30 }] }),
    point('humidity', 'humidity'),
    point('battery.level', 'number', { source: 'device.battery' }),
    point('Signal', 'number', { radio: 'rssi', thresholds: [{ status: 'WARNING', below: -110 }] }),
    point('SNR', 'number', { radio: 'snr' }),
    point('Gateways', 'integer', { radio: 'gatewayCount' }),
    point('FrameCounter', 'integer', { radio: 'frameCounter' }),
    point('SF', 'integer', { radio: 'spreadingFactor' }),
    point('Battery', 'number', { radio: 'battery', thresholds: [{ status: 'WARNING', below: 20 }] }),
    point('Margin', 'number', { radio: 'batteryMargin' }),
  ],
};

/** Bytes of a reading of CLIMATE's codec. */
const climate = (temperature: number, humidity: number, battery: number): number[] => {
  const t = Math.round(temperature * 100) & 0xffff;
  return [t >> 8, t & 0xff, Math.round(humidity * 2), battery];
};

let h: ApiHarness;
let vigil: RunningVigil;
let token: string;
let apiKey: string;
/** An API key that may create one device of ClimateNode, labelled site=farm. */
let creatingKey: string;
let api: string;
let gateway: string;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({ roles: 'gateway,worker,api' }, (fn) => cleanups.push(fn));
  ({ token, apiKey } = await h.seedEnvironment('farm'));
  await h.admin.applyDefinition({ kind: 'private', env: 'farm' }, CLIMATE, CODEC);
  for (const name of ['greenhouse-1', 'greenhouse-2', 'barn', 'field-1']) {
    await h.admin.createDevice('farm', {
      name,
      displayName: name,
      definitionName: 'ClimateNode',
      definitionIsPublic: false,
    });
  }
  // Named otherwise in Vigil than in the network server: found by its devEui label.
  await h.admin.createDevice('farm', {
    name: 'orchard',
    displayName: 'Orchard',
    definitionName: 'ClimateNode',
    definitionIsPublic: false,
    labels: { devEui: '0004A30B001C05A0' },
  });
  ({ key: creatingKey } = await h.admin.createApiKey('farm', 'ttn-farm', {
    definitionName: 'ClimateNode',
    labels: { site: 'farm' },
    maxDevices: 1,
  }));
  vigil = await startVigil(h.config, createLogger('silent'));
  api = `http://127.0.0.1:${vigil.ports.api}`;
  gateway = `http://127.0.0.1:${vigil.ports.gateway}`;
});

afterAll(async () => {
  await vigil?.close();
  for (const fn of cleanups.reverse()) await fn();
});

const post = (path: string, body: unknown, query?: string) =>
  call(gateway, `/${path}/${apiKey}`, { body, contentType: 'application/json', ...(query ? { query } : {}) });

const sensors = (deviceName: string) => call(api, '/sensors/list', { token, body: { deviceName } });
const valueOf = (list: CallResult, name: string): unknown =>
  (list.json?.data as { sensorName: string; rawValue: unknown }[] | undefined)?.find(
    (s) => s.sensorName === name,
  )?.rawValue;

/** The ingestion log's entry of `id`, once the worker (or the gateway) wrote it. */
const logEntry = async (id: string): Promise<Record<string, unknown>> => {
  const found = await eventually(
    async () => {
      const log = await call(api, '/ingest/log', { token });
      return (log.json.data as Record<string, unknown>[]).find((e) => e.ingestId === id);
    },
    { until: (e) => e !== undefined, message: `ingestion log entry ${id}` },
  );
  return found!;
};

/** History points of one data point of a device, from InfluxDB. */
async function historyCount(device: string, sensor: string): Promise<number> {
  const [series] = await h.influx.query(
    `SELECT count("value") FROM "raw"."readings" WHERE "env" = 'farm' AND "device" = '${device}' AND "sensor" = '${sensor}'`,
  );
  return Number(series?.[0]?.values?.[0]?.[1] ?? 0);
}

describe('The Things Stack webhooks', () => {
  it('decodes an uplink with the codec and fills radio data points from its metadata', async () => {
    const receivedAt = new Date(Date.now() - 1000).toISOString().replace('Z', '456789Z');
    const answer = await post(
      'tts',
      ttsUplink({
        deviceId: 'greenhouse-1',
        devEui: '0004A30B001C0530',
        bytes: climate(21.57, 48.5, 87),
        fPort: 2,
        fCnt: 41,
        receivedAt,
        gateways: [
          { rssi: -97, snr: 2.5 },
          { rssi: -71, snr: 8.75 },
        ],
        spreadingFactor: 9,
      }),
    );
    expect(answer.status).toBe(202);
    const list = await eventually(() => sensors('greenhouse-1'), {
      until: (r) => valueOf(r, 'temperature') === 21.57,
    });
    expect(valueOf(list, 'humidity')).toBe(48.5);
    expect(valueOf(list, 'battery.level')).toBe(87);
    expect(valueOf(list, 'Signal')).toBe(-71);
    expect(valueOf(list, 'SNR')).toBe(8.75);
    expect(valueOf(list, 'Gateways')).toBe(2);
    expect(valueOf(list, 'FrameCounter')).toBe(41);
    expect(valueOf(list, 'SF')).toBe(9);
    const measured = (list.json.data as { sensorName: string; updatedAt: string }[]).find(
      (s) => s.sensorName === 'temperature',
    );
    // The measurement time is the network server's receive time.
    expect(Date.parse(measured!.updatedAt)).toBe(Date.parse(receivedAt));
    expect(await logEntry(answer.json.data.id)).toMatchObject({
      gateway: 'tts',
      outcome: 'accepted',
      code: null,
    });
  });

  it('reads a frame counter left out of the JSON as 0', async () => {
    const answer = await post(
      'tts',
      ttsUplink({
        deviceId: 'barn',
        devEui: '0004A30B001C0531',
        bytes: climate(12, 60, 50),
        fPort: 2,
        receivedAt: new Date().toISOString(),
      }),
    );
    expect(answer.status).toBe(202);
    const list = await eventually(() => sensors('barn'), { until: (r) => valueOf(r, 'temperature') === 12 });
    expect(valueOf(list, 'FrameCounter')).toBe(0);
  });

  it('takes the same uplink delivered twice, in envelopes that differ, as one history point and one event', async () => {
    const receivedAt = new Date(Date.now() - 500).toISOString();
    const frame = {
      deviceId: 'greenhouse-2',
      devEui: '0004A30B001C0532',
      bytes: climate(31.5, 40, 80),
      fPort: 2,
      fCnt: 7,
      receivedAt,
    };
    const first = await post('tts', ttsUplink({ ...frame, correlationId: 'as:up:first' }));
    expect(first.status).toBe(202);
    await eventually(() => sensors('greenhouse-2'), { until: (r) => valueOf(r, 'temperature') === 31.5 });
    const retry = ttsUplink({ ...frame, correlationId: 'as:up:retry', gateways: [{ rssi: -80, snr: 3 }] });
    const second = await post('tts', retry);
    expect(second.status).toBe(202);
    await logEntry(second.json.data.id);
    await eventually(() => historyCount('greenhouse-2', 'temperature'), { until: (n) => n >= 1 });
    // The second delivery is processed (its log entry is written with the step's acknowledgement,
    // after history): still one point, and the warning raised once.
    expect(await historyCount('greenhouse-2', 'temperature')).toBe(1);
    const events = await call(api, '/devices/events', { token, body: { deviceName: 'greenhouse-2' } });
    const warnings = (events.json.data as { sensorName: string; eventStatus: string }[]).filter(
      (e) => e.sensorName === 'temperature' && e.eventStatus === 'WARNING',
    );
    expect(warnings).toHaveLength(1);
  });

  it('accepts a join-accept with 200 and logs it as ignored', async () => {
    const answer = await post('tts', ttsJoinAccept('greenhouse-1', '0004A30B001C0530'));
    expect(answer.status).toBe(200);
    expect(answer.json.data.ignored).toBe(true);
    expect(await logEntry(answer.json.data.id)).toMatchObject({
      gateway: 'tts',
      outcome: 'ignored',
      deviceName: 'greenhouse-1',
    });
  });

  it('refuses a body that is not a TTS message with INVALID_NETWORK_MESSAGE', async () => {
    const answer = await post('tts', { hello: 'world' });
    expect(answer.status).toBe(400);
    expect(answer.json.error.code).toBe('INVALID_NETWORK_MESSAGE');
    const bad = ttsUplink({
      deviceId: 'barn',
      devEui: '0004A30B001C0531',
      bytes: [1],
      fPort: 2,
      receivedAt: 'yesterday',
    });
    expect((await post('tts', bad)).json.error.code).toBe('INVALID_NETWORK_MESSAGE');
  });

  it('logs a codec’s errors as PARSER_CODEC_ERRORS and its warnings beside an accepted payload', async () => {
    // Later than barn's earlier uplinks: older values would not replace the current ones.
    const now = Date.now() + 2000;
    const failed = await post(
      'tts',
      ttsUplink({
        deviceId: 'barn',
        devEui: '0004A30B001C0531',
        bytes: [1, 2, 3, 4],
        fPort: 9,
        fCnt: 3,
        receivedAt: new Date(now - 2000).toISOString(),
      }),
    );
    expect(await logEntry(failed.json.data.id)).toMatchObject({
      outcome: 'rejected',
      code: 'PARSER_CODEC_ERRORS',
    });
    const warned = await post(
      'tts',
      ttsUplink({
        deviceId: 'barn',
        devEui: '0004A30B001C0531',
        bytes: climate(13, 61, 5),
        fPort: 2,
        fCnt: 4,
        receivedAt: new Date(now - 1000).toISOString(),
      }),
    );
    expect(await logEntry(warned.json.data.id)).toMatchObject({
      outcome: 'accepted',
      code: 'PARSER_CODEC_WARNINGS',
    });
    await eventually(() => sensors('barn'), { until: (r) => valueOf(r, 'battery.level') === 5 });
  });

  it('refuses a device id that is no valid device name, with no device of its DevEUI, with its own code', async () => {
    const answer = await post(
      'tts',
      ttsUplink({
        deviceId: ' spaced ',
        devEui: '00000000000000ff',
        bytes: climate(1, 1, 1),
        fPort: 2,
        receivedAt: new Date().toISOString(),
      }),
    );
    expect(answer.status).toBe(202);
    expect(await logEntry(answer.json.data.id)).toMatchObject({
      outcome: 'rejected',
      code: 'NETWORK_DEVICE_NAME_INVALID',
    });
  });
});

describe('ChirpStack HTTP integration', () => {
  it('takes up events as data and status events as the battery level', async () => {
    const time = new Date(Date.now() - 3000).toISOString().replace('Z', '123456+00:00');
    const up = await post(
      'chirpstack',
      chirpstackUp({
        deviceId: 'field-1',
        devEui: '0004a30b001c0540',
        bytes: climate(18.25, 55, 90),
        fPort: 2,
        fCnt: 42,
        receivedAt: time,
      }),
      'event=up',
    );
    expect(up.status).toBe(202);
    await eventually(() => sensors('field-1'), { until: (r) => valueOf(r, 'temperature') === 18.25 });
    const status = await post(
      'chirpstack',
      chirpstackStatus('field-1', '0004a30b001c0540', new Date().toISOString(), {
        margin: 7,
        batteryLevel: 15.5,
      }),
      'event=status',
    );
    expect(status.status).toBe(202);
    const list = await eventually(() => sensors('field-1'), { until: (r) => valueOf(r, 'Battery') === 15.5 });
    expect(valueOf(list, 'Margin')).toBe(7);
    const battery = (list.json.data as { sensorName: string; currentStatus: string }[]).find(
      (s) => s.sensorName === 'Battery',
    );
    expect(battery?.currentStatus).toBe('WARNING');
  });

  it('accepts join, log and other events and logs them as ignored', async () => {
    for (const [event, body] of [
      ['join', chirpstackJoin('barn', '0004a30b001c0531')],
      ['log', chirpstackLog('barn', '0004a30b001c0531')],
      ['txack', { ...chirpstackJoin('barn', '0004a30b001c0531'), queueItemId: 'x', fCntDown: 3 }],
    ] as const) {
      const answer = await post('chirpstack', body, `event=${event}`);
      expect(answer.status).toBe(200);
      expect(await logEntry(answer.json.data.id)).toMatchObject({
        gateway: 'chirpstack',
        outcome: 'ignored',
      });
    }
  });

  it('refuses an event without ?event=', async () => {
    const answer = await post('chirpstack', chirpstackJoin('barn', '0004a30b001c0531'));
    expect(answer.status).toBe(400);
    expect(answer.json.error.code).toBe('INVALID_NETWORK_MESSAGE');
  });
});

describe('devices the network server names otherwise, or Vigil does not know', () => {
  const uplink = (deviceId: string, devEui: string, temperature: number) =>
    ttsUplink({
      deviceId,
      devEui,
      bytes: climate(temperature, 50, 70),
      fPort: 2,
      fCnt: 1,
      receivedAt: new Date().toISOString(),
    });

  it('finds a device by the devEui label when its device id is not a device name', async () => {
    const byId = await post('tts', uplink('eui-0004a30b001c05a0', '0004A30B001C05A0', 17.5));
    expect(byId.status).toBe(202);
    await eventually(() => sensors('orchard'), { until: (r) => valueOf(r, 'temperature') === 17.5 });
    expect(await logEntry(byId.json.data.id)).toMatchObject({ outcome: 'accepted', deviceName: 'orchard' });
    // A ChirpStack device name Vigil's name rule refuses is matched by DevEUI too.
    const time = new Date(Date.now() + 1000).toISOString();
    const refusedName = chirpstackUp({
      deviceId: 'Orchard #1 (north)',
      devEui: '0004a30b001c05a0',
      bytes: climate(17.75, 50, 70),
      fPort: 2,
      receivedAt: time,
    });
    expect((await post('chirpstack', refusedName, 'event=up')).status).toBe(202);
    await eventually(() => sensors('orchard'), { until: (r) => valueOf(r, 'temperature') === 17.75 });
  });

  it('refuses an unknown device through a key that creates none', async () => {
    const answer = await post('tts', uplink('new-node-0', '00000000000000a0', 10));
    expect(await logEntry(answer.json.data.id)).toMatchObject({
      outcome: 'rejected',
      code: 'UNKNOWN_DEVICE',
    });
  });

  it('creates an unknown device through a key that may, up to its cap, audited, with its devEui label', async () => {
    const created = await call(gateway, `/tts/${creatingKey}`, {
      body: uplink('new-node-1', '00000000000000A1', 11.5),
      contentType: 'application/json',
    });
    expect(created.status).toBe(202);
    const list = await eventually(() => sensors('new-node-1'), {
      until: (r) => valueOf(r, 'temperature') === 11.5,
    });
    expect(valueOf(list, 'FrameCounter')).toBe(1);
    const device = await call(api, '/devices/list', { token });
    expect(
      (device.json.data as { deviceName: string; labels: object }[]).find(
        (d) => d.deviceName === 'new-node-1',
      )?.labels,
    ).toEqual({
      site: 'farm',
      devEui: '00000000000000a1',
    });
    const audit = await createAuditLog({ redis: h.redis, keys: h.keys, retentionMs: 86_400_000 }).list(
      'farm',
      {
        action: 'device.create',
        target: 'new-node-1',
        limit: 10,
      },
    );
    expect(audit.entries).toHaveLength(1);
    expect(audit.entries[0]?.actor).toBe('apiKey:ttn-farm');

    const overCap = await call(gateway, `/tts/${creatingKey}`, {
      body: uplink('new-node-2', '00000000000000A2', 12),
      contentType: 'application/json',
    });
    expect(await logEntry(overCap.json.data.id)).toMatchObject({
      outcome: 'rejected',
      code: 'AUTO_CREATE_LIMIT',
    });
    // The device created is found again by name: no second creation, nothing over the cap.
    const again = await call(gateway, `/tts/${creatingKey}`, {
      body: ttsUplink({
        deviceId: 'new-node-1',
        devEui: '00000000000000A1',
        bytes: climate(11.75, 50, 70),
        fPort: 2,
        fCnt: 2,
        receivedAt: new Date(Date.now() + 1000).toISOString(),
      }),
      contentType: 'application/json',
    });
    expect(await logEntry(again.json.data.id)).toMatchObject({
      outcome: 'accepted',
      deviceName: 'new-node-1',
    });
  });
});
