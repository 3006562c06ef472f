/**
 * MQTT QoS 1 load generator (mqtt.js): a few connections, each with a bounded in-flight window
 * (unbounded publish loops collapse to ~2k msgs/s), optionally paced to a target rate. Bounded in
 * time and count; it stops by itself.
 */
import { connectAsync, type MqttClient } from 'mqtt';

export interface MqttLoadOptions {
  url: string;
  topic: string;
  /** Body of the seq-th payload (0-based, across all connections). */
  body: (seq: number) => string;
  connections: number;
  /** Unacknowledged publishes allowed per connection. */
  window: number;
  /** Payloads/s over all connections; undefined = as fast as the windows allow. */
  ratePerSecond?: number;
  /** Hard stop after this many seconds. */
  maxSeconds: number;
  /** Hard stop after this many payloads. */
  maxPayloads?: number;
  /** The MQTT password: an API key for Vigil's broker (which requires one); none for the bare aedes ceiling. */
  password?: string;
}

export interface MqttLoad {
  /** PUBACKs received so far. */
  acked(): number;
  /** Stops publishing and waits (up to 10 s) for outstanding PUBACKs; resolves with totals. */
  stop(): Promise<{ sent: number; acked: number; errors: number }>;
  /** Resolves when the time or count bound ends the run. */
  finished: Promise<void>;
}

export async function startMqttLoad(opts: MqttLoadOptions): Promise<MqttLoad> {
  const clients: MqttClient[] = [];
  for (let i = 0; i < opts.connections; i++) {
    clients.push(
      await connectAsync(opts.url, {
        clientId: `bench-${process.pid}-${i}-${Date.now()}`,
        clean: true,
        reconnectPeriod: 1000,
        ...(opts.password === undefined ? {} : { username: 'bench', password: opts.password }),
      }),
    );
  }
  let seq = 0;
  let sent = 0;
  let acked = 0;
  let errors = 0;
  let stopped = false;
  const inflight = new Array<number>(clients.length).fill(0);
  const maxPayloads = opts.maxPayloads ?? Number.POSITIVE_INFINITY;
  const pacing = opts.ratePerSecond !== undefined;
  let tokens = 0;
  let lastRefill = performance.now();

  const pump = (c: number): void => {
    const client = clients[c]!;
    while (!stopped && inflight[c]! < opts.window && sent < maxPayloads && (!pacing || tokens >= 1)) {
      if (pacing) tokens--;
      const body = opts.body(seq++);
      sent++;
      inflight[c]!++;
      client.publish(opts.topic, body, { qos: 1 }, (err) => {
        inflight[c]!--;
        if (err) errors++;
        else acked++;
        if (!pacing) pump(c);
      });
    }
  };
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const refill = setInterval(
    () => {
      if (pacing) {
        const now = performance.now();
        // At most 50 ms worth of burst, so a stall is not followed by a flood.
        tokens = Math.min(
          tokens + ((now - lastRefill) / 1000) * opts.ratePerSecond!,
          opts.ratePerSecond! * 0.05 + 1,
        );
        lastRefill = now;
      }
      for (let c = 0; c < clients.length; c++) pump(c);
      if (sent >= maxPayloads && inflight.every((n) => n === 0)) finish();
    },
    pacing ? 5 : 50,
  );
  const deadline = setTimeout(finish, opts.maxSeconds * 1000);
  for (let c = 0; c < clients.length; c++) pump(c);

  let stopping: Promise<{ sent: number; acked: number; errors: number }> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      stopped = true;
      clearInterval(refill);
      clearTimeout(deadline);
      finish();
      const until = Date.now() + 10_000;
      while (inflight.some((n) => n > 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await Promise.all(clients.map((c) => c.endAsync(true)));
      return { sent, acked, errors };
    })());
  return { acked: () => acked, stop, finished };
}
