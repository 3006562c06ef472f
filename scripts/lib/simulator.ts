/**
 * Demo simulator: posts realistic readings for the demo devices to the gateway every few
 * seconds. The R&D office fills up during a "meeting" (CO2 and occupancy climb over its
 * thresholds, then recover), the hallway warms up now and then, and the reception goes silent
 * after a while so its Availability event appears. The LoRaWAN greenhouse node's uplinks come as
 * The Things Stack's webhook posts them, its bytes for the vendor's codec; its soil dries out
 * until the valve opens, and its radio signal fades now and then. Connection errors and non-2xx
 * answers are reported once per kind and retried on the next tick.
 */
import { ttsUplink } from './network-messages.ts';

export interface SimulatorOptions {
  /** e.g. http://127.0.0.1:8081 */
  gatewayUrl: string;
  apiKey: string;
  intervalMs?: number;
  /** device_3_reception stops posting after this long. */
  silentAfterMs?: number;
  say?: (message: string) => void;
}

interface Room {
  deviceName: string;
  temperature: number;
  humidity: number;
  lux: number;
  batteryMv: number;
  co2: number;
  occupancy: number;
  /** Occupancy the room drifts towards. */
  targetOccupancy: number;
}

const room = (deviceName: string, temperature: number, occupancy: number): Room => ({
  deviceName,
  temperature,
  humidity: 45,
  lux: 320,
  batteryMv: 3150,
  co2: 480,
  occupancy,
  targetOccupancy: occupancy,
});

const drift = (value: number, target: number, rate: number, noise: number) =>
  value + (target - value) * rate + (Math.random() - 0.5) * noise;
const round = (n: number, decimals: number) => Math.round(n * 10 ** decimals) / 10 ** decimals;

/** Advances a room by one tick; `tick` drives the slow scenarios. */
export function step(r: Room, tick: number): Record<string, unknown> {
  if (r.deviceName === 'device_2_rd_office') {
    // A meeting every 40 ticks for 15 ticks: people arrive, CO2 climbs past 800/1200 ppm.
    r.targetOccupancy = tick % 40 < 15 ? 30 : 4;
  } else if (Math.random() < 0.05) {
    r.targetOccupancy = Math.floor(Math.random() * 6);
  }
  r.occupancy = Math.max(0, Math.round(drift(r.occupancy, r.targetOccupancy, 0.3, 1)));
  r.co2 = Math.max(400, drift(r.co2, 420 + r.occupancy * 45, 0.15, 20));
  // The hallway's sun-facing window: a warm spell every 60 ticks crosses 25 °C.
  const sun = r.deviceName === 'device_1_hallway' && tick % 60 >= 45 ? 7 : 0;
  r.temperature = drift(r.temperature, 21 + r.occupancy * 0.08 + sun, 0.1, 0.2);
  r.humidity = Math.min(100, Math.max(0, drift(r.humidity, 42 + r.occupancy * 0.4, 0.1, 1)));
  r.lux = Math.max(0, drift(r.lux, r.occupancy > 0 ? 350 : 120, 0.2, 15));
  r.batteryMv = Math.max(2600, r.batteryMv - Math.random() * 0.5);
  return {
    deviceName: r.deviceName,
    Temperature: round(r.temperature, 2),
    Humidity: round(r.humidity, 1),
    Illuminance: Math.round(r.lux),
    Battery: Math.round(r.batteryMv),
    CO2: Math.round(r.co2),
    Occupancy: r.occupancy,
  };
}

/** The demo's LoRaWAN node: what it measures, and its frame counter. */
export interface Greenhouse {
  temperature: number;
  humidity: number;
  moisture: number;
  valveOpen: boolean;
  batteryMv: number;
  rssi: number;
  frames: number;
}

export const greenhouse = (): Greenhouse => ({
  temperature: 24,
  humidity: 70,
  moisture: 45,
  valveOpen: false,
  batteryMv: 3300,
  rssi: -92,
  frames: 0,
});

/** The DevEUI the demo's network server knows the greenhouse node by (its `devEui` label in Vigil). */
const GREENHOUSE_EUI = '70B3D57ED005A1B2';

/**
 * Advances the greenhouse node by one tick and gives its next uplink as The Things Stack posts it:
 * the codec's 7 bytes on fPort 1 (config/provisioning/demo/definitions/greenhouse-node.js).
 */
export function greenhouseUplink(g: Greenhouse, tick: number): Record<string, unknown> {
  // The soil dries until it is under 25 %, then the valve waters it back to 55 %.
  if (g.moisture < 22) g.valveOpen = true;
  if (g.moisture > 55) g.valveOpen = false;
  g.moisture = Math.min(100, Math.max(0, g.moisture + (g.valveOpen ? 4 : -0.8) + (Math.random() - 0.5)));
  g.temperature = drift(g.temperature, 26 + 4 * Math.sin(tick / 30), 0.2, 0.3);
  g.humidity = Math.min(100, Math.max(0, drift(g.humidity, 72, 0.1, 1)));
  g.batteryMv = Math.max(2600, g.batteryMv - Math.random() * 0.5);
  // A tractor parks in front of the antenna for 8 ticks of every 50: the signal drops under -115 dBm.
  g.rssi = drift(g.rssi, tick % 50 >= 42 ? -119 : -92, 0.5, 2);
  g.frames += 1;
  const t = Math.round(g.temperature * 10) & 0xffff;
  const mv = Math.round(g.batteryMv);
  const bytes = [
    t >> 8,
    t & 0xff,
    Math.round(g.humidity * 2),
    Math.round(g.moisture),
    mv >> 8,
    mv & 0xff,
    g.valveOpen ? 1 : 0,
  ];
  return ttsUplink({
    deviceId: `eui-${GREENHOUSE_EUI.toLowerCase()}`,
    devEui: GREENHOUSE_EUI,
    bytes,
    fPort: 1,
    fCnt: g.frames,
    receivedAt: new Date().toISOString(),
    gateways: [
      { rssi: Math.round(g.rssi), snr: Math.round((g.rssi + 100) / 2) },
      ...(tick % 3 === 0 ? [{ rssi: Math.round(g.rssi) - 9, snr: -6 }] : []),
    ],
    spreadingFactor: 9,
  });
}

export function startSimulator(options: SimulatorOptions): { stop(): void } {
  const intervalMs = options.intervalMs ?? 5000;
  const silentAfterMs = options.silentAfterMs ?? 60_000;
  const say = options.say ?? ((m: string) => process.stderr.write(`[simulator] ${m}\n`));
  const key = encodeURIComponent(options.apiKey);
  const url = `${options.gatewayUrl}/gateway/submit/${key}`;
  const ttsUrl = `${options.gatewayUrl}/tts/${key}`;
  const node = greenhouse();
  const rooms = [
    room('device_1_hallway', 20.5, 2),
    room('device_2_rd_office', 21.5, 8),
    room('device_3_reception', 21, 1),
  ];
  const startedMs = Date.now();
  const reported = new Set<string>();
  let tick = 0;
  let silenced = false;
  let okSinceProblem = true;

  const report = (kind: string, message: string) => {
    okSinceProblem = false;
    if (reported.has(kind)) return;
    reported.add(kind);
    say(`${message} (will keep trying every ${intervalMs / 1000} s)`);
  };

  async function post(body: Record<string, unknown>, to = url) {
    try {
      const res = await fetch(to, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5000),
      });
      if (res.ok) {
        if (!okSinceProblem) say('gateway accepts payloads again');
        okSinceProblem = true;
        reported.clear();
        return;
      }
      const text = (await res.text()).slice(0, 200);
      report(`http-${res.status}`, `gateway answered ${res.status}: ${text}`);
    } catch (err) {
      report('connect', `cannot reach the gateway at ${options.gatewayUrl}: ${(err as Error).message}`);
    }
  }

  const timer = setInterval(() => {
    tick++;
    const silent = Date.now() - startedMs > silentAfterMs;
    if (silent && !silenced) {
      silenced = true;
      say('device_3_reception goes silent now; expect an Availability event after its 2-minute timeout');
    }
    for (const r of rooms) {
      if (silent && r.deviceName === 'device_3_reception') continue;
      void post(step(r, tick));
    }
    void post(greenhouseUplink(node, tick), ttsUrl);
  }, intervalMs);
  say(
    `posting readings for ${rooms.length} devices, and a LoRaWAN node's uplinks as The Things Stack posts them, every ${intervalMs / 1000} s to ${options.gatewayUrl}`,
  );
  return { stop: () => clearInterval(timer) };
}
