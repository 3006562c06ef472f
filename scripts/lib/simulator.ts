/**
 * Demo simulator: posts realistic readings for the three demo devices to the gateway every few
 * seconds. The R&D office fills up during a "meeting" (CO2 and occupancy climb over its
 * thresholds, then recover), the hallway warms up now and then, and the reception goes silent
 * after a while so its Availability event appears. Connection errors and non-2xx answers are
 * reported once per kind and retried on the next tick.
 */

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

export function startSimulator(options: SimulatorOptions): { stop(): void } {
  const intervalMs = options.intervalMs ?? 5000;
  const silentAfterMs = options.silentAfterMs ?? 60_000;
  const say = options.say ?? ((m: string) => process.stderr.write(`[simulator] ${m}\n`));
  const url = `${options.gatewayUrl}/gateway/submit/${encodeURIComponent(options.apiKey)}`;
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

  async function post(body: Record<string, unknown>) {
    try {
      const res = await fetch(url, {
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
  }, intervalMs);
  say(`posting readings for ${rooms.length} devices every ${intervalMs / 1000} s to ${options.gatewayUrl}`);
  return { stop: () => clearInterval(timer) };
}
