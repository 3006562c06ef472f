import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEVICE_FIELD } from '../../src/state/state-keys.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { storedState, type StoredState } from '../support/state.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';

interface StoredEvent {
  id: string;
  deviceName: string;
  sensorName: string;
  eventStatus: string;
  eventCategory: string;
  eventMessage: string;
  sensorValue: unknown;
}

async function events(p: Pipeline, env: string): Promise<StoredEvent[]> {
  return (await p.redis.zrange(p.keys.envEvents(env), 0, -1)).map((j) => JSON.parse(j) as StoredEvent);
}

async function stateOf(p: Pipeline, env: string, device: string): Promise<StoredState> {
  return storedState(p.redis, p.keys.deviceState(env, device));
}

/** Waits until env acme has at least `count` Availability events; returns them. */
async function availabilityEvents(p: Pipeline, count: number): Promise<StoredEvent[]> {
  return eventually(
    async () => {
      const ev = (await events(p, 'acme')).filter((e) => e.eventCategory === 'Availability');
      return ev.length >= count ? ev : undefined;
    },
    { timeoutMs: 10_000, message: `${count} availability event(s)` },
  );
}

/** Waits until every submitted payload has an ingestion log entry. */
async function processed(p: Pipeline, env: string, count: number) {
  return eventually(
    async () => {
      const n = await p.redis.llen(p.keys.ingestLog(env));
      return n >= count ? n : undefined;
    },
    { timeoutMs: 15_000, message: `${count} ingestion log entries` },
  );
}

async function ingestLog(p: Pipeline, env: string) {
  return (await p.redis.lrange(p.keys.ingestLog(env), 0, -1)).map(
    (j) => readEntry(j) as unknown as Record<string, unknown>,
  );
}

describe('processing', () => {
  it('turns a gateway payload into state, formatted values, events, history and an ingestion log entry', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['device_1_hallway']);
    const res = await p.post(
      'gateway/submit',
      key,
      JSON.stringify({ deviceName: 'device_1_hallway', Temperature: 26.04, Humidity: '45.2', Battery: 3300 }),
    );
    expect(res.status).toBe(202);
    await processed(p, 'acme', 1);
    const s = await stateOf(p, 'acme', 'device_1_hallway');
    expect(s.points.Temperature?.value).toBe('26.04');
    expect(s.points.Temperature?.status).toBe('WARNING');
    expect(s.points.Humidity?.value).toBe('45.2');
    expect(s.points.Battery?.status).toBe('SUCCESS');
    expect(Number(s.device[DEVICE_FIELD.lastContact])).toBeGreaterThan(Date.now() - 60_000);
    expect((await events(p, 'acme')).map((e) => e.eventMessage)).toEqual([
      'Temperature - Above 25 °C - WARNING - 26.0 °C',
    ]);
    const [entry] = await ingestLog(p, 'acme');
    expect(entry).toMatchObject({
      outcome: 'accepted',
      deviceName: 'device_1_hallway',
      code: null,
      gateway: 'submit',
    });
    const series = await eventually(
      async () => {
        const [result] = await p.influx.query(
          `SELECT count("value") FROM /.*/ WHERE "device" = 'device_1_hallway' GROUP BY "sensor"`,
        );
        return result && result.length >= 3 ? result : undefined;
      },
      { timeoutMs: 10_000, message: 'history points' },
    );
    expect(series.map((s) => s.tags?.sensor).sort()).toEqual(['Battery', 'Humidity', 'Temperature']);
  });

  it('logs unknown devices, unknown data points and failed conversions while keeping the rest', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'nope', Temperature: 20 }));
    await p.post(
      'gateway/submit',
      key,
      JSON.stringify({ deviceName: 'd1', Temperature: 'hot', Humidity: 140, CO2: 600, Extra: 1 }),
    );
    await processed(p, 'acme', 2);
    const log = await ingestLog(p, 'acme');
    const byDevice: Record<string, Record<string, unknown>> = Object.fromEntries(
      log.map((e) => [String(e.deviceName), e]),
    );
    expect(byDevice.nope).toMatchObject({ outcome: 'rejected', code: 'UNKNOWN_DEVICE' });
    expect(byDevice.d1).toMatchObject({ outcome: 'partial', code: 'VALUE_CONVERSION_FAILED' });
    expect(String(byDevice.d1!.message)).toContain('UNKNOWN_DATA_POINT');
    expect(await p.redis.exists(p.keys.deviceState('acme', 'nope'))).toBe(0);
    const s = await stateOf(p, 'acme', 'd1');
    expect(s.points.CO2?.value).toBe('600');
    expect(s.points.Temperature).toBeUndefined();
  });

  it('keeps the newest measurement as current state when values arrive out of order', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.admin.setPreparser(
      'acme',
      `function parsePayload(s) { const j = JSON.parse(s); return { deviceName: j.d, time: j.t, payload: { Temperature: j.v } }; }`,
      true,
    );
    const base = Date.now() - 60_000;
    await p.post('gateway/submit', key, JSON.stringify({ d: 'd1', t: base + 2000, v: 31 }));
    await processed(p, 'acme', 1);
    await p.post('gateway/submit', key, JSON.stringify({ d: 'd1', t: base + 1000, v: 20 }));
    await processed(p, 'acme', 2);
    const s = await stateOf(p, 'acme', 'd1');
    expect(s.points.Temperature?.value).toBe('31');
    expect(s.points.Temperature?.updatedMs).toBe(base + 2000);
    const [result] = await eventually(
      async () => {
        const r = await p.influx.query(
          `SELECT "value" FROM /.*/ WHERE "device" = 'd1' AND "sensor" = 'Temperature'`,
        );
        return r[0]?.[0]?.values.length === 2 ? r : undefined;
      },
      { timeoutMs: 10_000, message: 'both values in history' },
    );
    expect(result![0]!.values.map((v) => v[1])).toEqual([20, 31]);
  });

  it('splits one upload into timestamped readings with the pre-parser', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['device_3_reception']);
    await p.admin.setPreparser(
      'acme',
      `function parsePayload(payloadStr) {
        const j = JSON.parse(payloadStr);
        return j.measurements.map((m) => ({ deviceName: j.devEUI, time: m.timestampInMs,
          payload: { Temperature: m.temperature, Humidity: m.humidity } }));
      }`,
      false,
    );
    const t0 = Date.now() - 3 * 60_000;
    const body = JSON.stringify({
      devEUI: 'device_3_reception',
      measurements: [0, 1, 2].map((i) => ({
        temperature: 22.5 + i,
        humidity: 45.2,
        timestampInMs: t0 + i * 60_000,
      })),
    });
    expect((await p.post('preparserfirst', key, body)).status).toBe(202);
    await processed(p, 'acme', 1);
    const s = await stateOf(p, 'acme', 'device_3_reception');
    expect(s.points.Temperature?.value).toBe('24.5');
    expect(s.points.Temperature?.updatedMs).toBe(t0 + 120_000);
    const r = await eventually(
      async () => {
        const res = await p.influx.query(`SELECT "value" FROM /.*/ WHERE "sensor" = 'Temperature'`);
        return res[0]?.[0]?.values.length === 3 ? res : undefined;
      },
      { timeoutMs: 10_000, message: 'three readings in history' },
    );
    expect(r[0]![0]!.values.map((v) => Math.floor(Number(v[0]) / 1000) * 1000)).toEqual(
      [t0, t0 + 60_000, t0 + 120_000].map((t) => Math.floor(t / 1000) * 1000),
    );
  });

  it('creates no events for a suppressed data point but still tracks its status', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.admin.suppress('acme', 'd1', 'Temperature', 0);
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 35 }));
    await processed(p, 'acme', 1);
    expect((await stateOf(p, 'acme', 'd1')).points.Temperature?.status).toBe('CRITICAL');
    expect(await events(p, 'acme')).toEqual([]);
  });

  it('picks up a new definition version without a restart', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', catalogCacheMs: 100 });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
    await processed(p, 'acme', 1);
    const { COMFORT_SPEC } = await import('../fixtures/definitions/comfort.ts');
    await p.admin.applyDefinition(
      { kind: 'private', env: 'acme' },
      { ...COMFORT_SPEC, version: '1.3' },
      'function parsePayload(s) { return { Temperature: JSON.parse(s).Temperature * 2 }; }',
    );
    // Once the worker's catalog entry expires, a payload goes through the new parser.
    let sent = 1;
    await eventually(
      async () => {
        const temperature = 10 + sent;
        await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: temperature }));
        await processed(p, 'acme', ++sent);
        return (await stateOf(p, 'acme', 'd1')).points.Temperature?.value === String(2 * temperature);
      },
      { timeoutMs: 10_000, message: 'a payload parsed by the new definition' },
    );
  });

  it('creates one Availability event on silence and one on return, with two schedulers running', async () => {
    const p = await startPipeline({ roles: 'gateway,worker,scheduler', availabilityCheckMs: 50 });
    const second = await startPipeline({
      roles: 'scheduler',
      availabilityCheckMs: 50,
      keyPrefix: p.config.keyPrefix,
      influxDatabase: p.config.influxDatabase,
    });
    expect(second.config.keyPrefix).toBe(p.config.keyPrefix);
    const { key } = await provisionComfort(p, 'acme', ['d1'], { availabilityMinutes: 0.01 });
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
    await processed(p, 'acme', 1);
    const lost = await availabilityEvents(p, 1);
    // No second event: the schedulers leave no trace of a pass that finds nothing, so the test lets
    // several of their (50 ms) intervals pass.
    await sleep(300);
    const afterWait = (await events(p, 'acme')).filter((e) => e.eventCategory === 'Availability');
    expect(afterWait).toHaveLength(1);
    expect(lost[0]).toMatchObject({ sensorName: 'availability', eventStatus: 'ERROR', sensorValue: 0 });
    expect(lost[0]!.eventMessage).toMatch(
      /^availability - No contact for 0 minutes - ERROR - \d{4}-\d\d-\d\dT/,
    );
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
    const all = await availabilityEvents(p, 2);
    expect(all.map((e) => e.eventStatus)).toEqual(['ERROR', 'SUCCESS']);
    expect(all[1]!.eventMessage).toMatch(/^availability - Contact restored - SUCCESS - /);
  });

  it('has the history schema in place before the first step: no failed step on a fresh database', async () => {
    // The payload waits in the queue, so the worker's first step runs as it starts, on a database
    // no process has created yet (the gateway role does not touch InfluxDB).
    const entry = await startPipeline({ roles: 'gateway' });
    const { key } = await provisionComfort(entry, 'acme', ['d1']);
    const res = await entry.post(
      'gateway/submit',
      key,
      JSON.stringify({ deviceName: 'd1', Temperature: 20 }),
    );
    await res.arrayBuffer();
    expect(res.status).toBe(202);
    // InfluxDB behind a proxy that holds each query (the schema statements) 250 ms and passes
    // writes at once: a worker that wrote before its schema was in place would fail its step.
    const influxUrl = await slowQueryProxy(entry.config.influxUrl, 250);
    const p = await startPipeline({
      roles: 'worker,api',
      keyPrefix: entry.config.keyPrefix,
      influxDatabase: entry.config.influxDatabase,
      influxUrl,
    });
    await processed(p, 'acme', 1);
    const metrics = await eventually(
      async () => {
        const text = await (await fetch(`${p.opsUrl}/metrics`)).text();
        return /^vigil_worker_steps_total\{result="completed"\} [1-9]/m.test(text) ? text : undefined;
      },
      { timeoutMs: 5000, message: 'the completed step counted' },
    );
    expect(metrics).not.toMatch(/^vigil_worker_steps_total\{result="failed"\}/m);
  });

  it('keeps a device that keeps reporting available across several deadlines, each moved only when due', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    // The scheduler alone runs on a clock the test moves: a device's contact is the gateway's
    // receive time (the real clock), and each deadline comes due when the test says, not after a
    // wait whose length a loaded machine would change.
    let nowMs = Date.now();
    await startPipeline(
      {
        roles: 'scheduler',
        availabilityCheckMs: 50,
        keyPrefix: p.config.keyPrefix,
        influxDatabase: p.config.influxDatabase,
      },
      { clock: () => nowMs },
    );
    const { key } = await provisionComfort(p, 'acme', ['d1'], { availabilityMinutes: 0.04 }); // 2.4 s
    const timeoutMs = 2400;
    const deadline = async () => Number(await p.redis.zscore(p.keys.availabilityDeadlines(), 'acme\nd1'));
    let sent = 0;
    /** Sends a payload of d1; answers its last contact once the payload is processed. */
    const report = async () => {
      const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
      await res.arrayBuffer();
      await processed(p, 'acme', ++sent);
      return Number(await p.redis.hget(p.keys.deviceState('acme', 'd1'), DEVICE_FIELD.lastContact));
    };
    let contact = await report();
    let due = contact + timeoutMs;
    expect(await deadline()).toBe(due);
    for (const round of [1, 2, 3]) {
      const before = contact;
      for (const _payload of [1, 2, 3]) contact = await report();
      expect(contact).toBeGreaterThan(before); // contact since the deadline was set
      expect(await deadline()).toBe(due); // moved by none of the payloads
      nowMs = due;
      due = await eventually(
        async () => {
          const moved = await deadline();
          return moved !== due ? moved : undefined;
        },
        { message: `deadline ${round} moved once due` },
      );
      expect(due).toBe(contact + timeoutMs);
    }
    expect((await events(p, 'acme')).filter((e) => e.eventCategory === 'Availability')).toEqual([]);
    nowMs = due; // no contact since the last deadline was set
    const lost = await availabilityEvents(p, 1);
    expect(lost[0]!.id).toBe(`acme/d1/availability-lost/${due}`);
  });
});

/** An HTTP proxy to `target` (loopback) that delays `/query` requests by `delayMs`; closed after the test. */
async function slowQueryProxy(target: string, delayMs: number): Promise<string> {
  const { port } = new URL(target);
  const server = createServer((req, res) => {
    const forward = () => {
      const upstream = request(
        { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (req.url?.startsWith('/query')) setTimeout(forward, delayMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
