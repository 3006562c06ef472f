/**
 * The bench environment: one definition with four data points (thresholds on each, so events
 * happen), `devices` devices, an API key for ingestion and a bearer token for the read API.
 */
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { DefinitionSpec } from '../../src/domain/types.ts';

export const BENCH_ENV = 'bench';

export const BENCH_SPEC: DefinitionSpec = {
  name: 'BenchSensors',
  manufacturer: 'Bench',
  version: '1',
  availability: { timeoutMinutes: 60, status: 'ERROR' },
  dataPoints: [
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0.5,
      thresholds: [
        { status: 'WARNING', above: 25 },
        { status: 'CRITICAL', above: 30 },
      ],
    },
    {
      name: 'Humidity',
      displayName: 'Humidity',
      dataType: 'humidity',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 70 }],
    },
    {
      name: 'CO2',
      displayName: 'CO2',
      dataType: 'co2',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 1000 }],
    },
    {
      name: 'Battery',
      displayName: 'Battery',
      dataType: 'millivolts',
      hysteresis: 0,
      thresholds: [{ status: 'ERROR', below: 2800 }],
    },
  ],
};

/** A typical user parser: parse the JSON, pick the data points. */
export const BENCH_PARSER = `function parsePayload(payloadStr) {
  const j = JSON.parse(payloadStr);
  return { Temperature: j.t, Humidity: j.h, CO2: j.c, Battery: j.b };
}`;

export const DATA_POINTS_PER_PAYLOAD = BENCH_SPEC.dataPoints.length;

export const deviceName = (i: number): string => `dev-${i}`;

/**
 * Payloads per device after which spread phases (payloadBody) create events at their steady rate:
 * the first crossings come 51 payloads in, and from then on a hundredth of the devices cross at
 * each payload of theirs.
 */
export const SPREAD_STEADY_PAYLOADS = 52;

/**
 * The body of the n-th payload of a device: 4 data points. Temperature walks 20 → 29.9 and back
 * to 20 every 100 payloads of a device, so each device crosses the WARNING threshold twice per
 * cycle (about 2 % of payloads create an event). With `phase` 0, devices sent to in turn cross
 * together (events come in bursts). A phase of 1–99 per device spreads the crossings over the
 * cycle: the device holds 20 until its walk starts, 100 − phase payloads in, rather than starting
 * part-way, since every device starting above the threshold would be a burst of events at once.
 */
export function payloadBody(device: number, n: number, phase = 0): string {
  const k = phase === 0 ? n : n - (100 - phase);
  const t = k < 0 ? 20 : 20 + (k % 100) / 10;
  return `{"deviceName":"dev-${device}","t":${t},"h":${40 + (n % 20)},"c":${600 + (n % 50)},"b":3000}`;
}

export interface Provisioned {
  apiKey: string;
  token: string;
}

/**
 * The bench definition with every rule waiting 1 s and a stale rule on every data point. A second
 * is shorter than a device's Temperature stays above its WARNING threshold (49 payloads: 2.7–8 s
 * at the bench's rates), so these rules fire as the plain ones do, a second later: the comparison
 * is of the same events, reached through pending conditions and their deadlines. (With 10 s they
 * never fired, and the definition that waits had fewer events to make than the one that did not.)
 */
export const WAITING_SPEC: DefinitionSpec = {
  ...BENCH_SPEC,
  dataPoints: BENCH_SPEC.dataPoints.map((dp) => ({
    ...dp,
    thresholds: dp.thresholds.map((rule) => ({ ...rule, forMs: 1_000 })),
    stale: { afterMs: 1_800_000, status: 'WARNING' },
  })),
};

/** A definition of the bench's devices other than the usual one (its name must be BENCH_SPEC's). */
export interface BenchDefinition {
  spec: DefinitionSpec;
  parser: string;
}

export interface ProvisionOptions {
  /** WAITING_SPEC instead of BENCH_SPEC (ignored with `definition`). */
  conditions?: boolean;
  definition?: BenchDefinition;
}

/** Devices created at once while provisioning. */
const CREATIONS_IN_FLIGHT = 32;

export async function provisionBench(
  redisUrl: string,
  keyPrefix: string,
  devices: number,
  opts: ProvisionOptions = {},
): Promise<Provisioned> {
  const redis = connectRedis(redisUrl, 'command', 'bench-provision');
  try {
    const admin = createTenancyAdmin(adminDeps(redis, createKeys(keyPrefix)));
    await admin.createEnvironment(BENCH_ENV, 'en');
    const { spec, parser } = opts.definition ?? {
      spec: opts.conditions ? WAITING_SPEC : BENCH_SPEC,
      parser: BENCH_PARSER,
    };
    await admin.applyDefinition({ kind: 'private', env: BENCH_ENV }, spec, parser);
    // Creations in flight together: one at a time, a fleet's devices take longer than its windows.
    for (let first = 0; first < devices; first += CREATIONS_IN_FLIGHT) {
      const last = Math.min(devices, first + CREATIONS_IN_FLIGHT);
      const creations: Promise<unknown>[] = [];
      for (let i = first; i < last; i++) {
        creations.push(
          admin.createDevice(BENCH_ENV, {
            name: deviceName(i),
            definitionName: BENCH_SPEC.name,
            definitionIsPublic: false,
          }),
        );
      }
      await Promise.all(creations);
    }
    const { key } = await admin.createApiKey(BENCH_ENV, 'bench');
    const { token } = await admin.createToken(BENCH_ENV, 'bench', 0);
    return { apiKey: key, token };
  } finally {
    await closeRedis(redis);
  }
}
