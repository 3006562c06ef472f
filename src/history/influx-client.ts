/**
 * Minimal InfluxDB v1 HTTP API client (served by InfluxDB 1.x, 2.x's v1 compatibility and 3.x):
 * `/ping`, `/query` (InfluxQL) and `/write` (line protocol). Queries and writes go over node:http
 * with a keep-alive agent; ping via fetch.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
export interface InfluxClientOptions {
  url: string;
  database: string;
  username?: string | undefined;
  password?: string | undefined;
  /** Per-request timeout in ms. */
  timeoutMs?: number;
}

export interface InfluxSeries {
  name: string;
  tags?: Record<string, string>;
  columns: string[];
  values: unknown[][];
}

export interface InfluxClient {
  readonly database: string;
  ping(): Promise<boolean>;
  /**
   * Runs InfluxQL; returns the series of each statement. Times as epoch ms, or as RFC 3339 strings
   * with `epoch: 'rfc3339'` (nanoseconds exact: epoch ns would not survive JSON numbers).
   */
  query(
    q: string,
    opts?: { database?: string | null; method?: 'GET' | 'POST'; epoch?: 'ms' | 'rfc3339' },
  ): Promise<InfluxSeries[][]>;
  /** Writes line protocol (nanosecond precision unless `precision` says otherwise). */
  write(
    lines: string,
    opts?: { precision?: 'ns' | 'u' | 'ms' | 's'; retentionPolicy?: string },
  ): Promise<void>;
}

/** A failed InfluxDB request: its HTTP status (0: no answer at all). */
export class InfluxError extends Error {
  override name = 'InfluxError';
  readonly status: number;
  /** InfluxDB could not be reached or failed on its side (5xx): an outage, not a bad request. */
  readonly outage: boolean;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
    this.outage = status === 0 || status >= 500;
  }
}

export function createInfluxClient(opts: InfluxClientOptions): InfluxClient {
  const base = opts.url.replace(/\/$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  // Credentials as a Basic Authorization header (InfluxDB 1.x, and 2.x/3.x's v1 API, read it),
  // never as u/p query parameters, which end up in proxy and access logs.
  const authorization = opts.username
    ? `Basic ${Buffer.from(`${opts.username}:${opts.password ?? ''}`).toString('base64')}`
    : undefined;
  const send = createSender(base, timeoutMs, authorization);
  return {
    database: opts.database,
    async ping() {
      try {
        const res = await fetch(`${base}/ping`, {
          signal: AbortSignal.timeout(Math.min(timeoutMs, 2000)),
          ...(authorization === undefined ? {} : { headers: { authorization } }),
        });
        await res.arrayBuffer();
        return res.status === 204 || res.ok;
      } catch {
        return false;
      }
    },
    async query(q, qopts = {}) {
      const params = new URLSearchParams({ q });
      if (qopts.epoch !== 'rfc3339') params.set('epoch', 'ms');
      const db = qopts.database === undefined ? opts.database : qopts.database;
      if (db) params.set('db', db);
      const method = qopts.method ?? (/^\s*(select|show)/i.test(q) ? 'GET' : 'POST');
      const res =
        method === 'GET'
          ? await send('GET', `/query?${params.toString()}`)
          : await send('POST', '/query', params.toString(), 'application/x-www-form-urlencoded');
      const text = res.text;
      if (res.status < 200 || res.status >= 300)
        throw new InfluxError(`InfluxDB query failed (${res.status}): ${text.slice(0, 300)}`, res.status);
      const body = JSON.parse(text) as {
        results?: { series?: InfluxSeries[]; error?: string }[];
        error?: string;
      };
      if (body.error) throw new InfluxError(`InfluxDB query error: ${body.error}`, res.status);
      return (body.results ?? []).map((r) => {
        if (r.error) throw new InfluxError(`InfluxDB query error: ${r.error}`, res.status);
        return r.series ?? [];
      });
    },
    async write(lines, wopts = {}) {
      const params = new URLSearchParams({ db: opts.database, precision: wopts.precision ?? 'ns' });
      if (wopts.retentionPolicy) params.set('rp', wopts.retentionPolicy);
      const res = await send('POST', `/write?${params.toString()}`, lines, 'text/plain; charset=utf-8');
      if (res.status !== 204) {
        throw new InfluxError(`InfluxDB write failed (${res.status}): ${res.text.slice(0, 300)}`, res.status);
      }
    },
  };
}

/**
 * Sends requests over node:http(s) with a keep-alive agent. fetch (undici) cost ~1 ms of CPU per
 * query and copied every write body through web streams; node:http costs a fraction of that. No
 * compression: answers are small and gzip costs CPU on both sides.
 */
function createSender(base: string, timeoutMs: number, authorization: string | undefined) {
  const origin = new URL(base);
  // node:https (and TLS) is loaded only for an https URL: it is a tenth of a worker's start-up.
  const https = origin.protocol === 'https:' ? process.getBuiltinModule('node:https') : undefined;
  const agent = https ? new https.Agent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const request = https ? https.request : httpRequest;
  const prefix = origin.pathname.replace(/\/$/, '');
  return (
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    contentType?: string,
  ): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'accept-encoding': 'identity' };
      if (authorization !== undefined) headers.authorization = authorization;
      if (body !== undefined) {
        headers['content-type'] = contentType ?? 'text/plain';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      const target = new URL(`${prefix}${path}`, origin);
      const req = request(target, { method, agent, headers }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      const timer = setTimeout(
        () => req.destroy(new InfluxError(`InfluxDB request timed out after ${timeoutMs} ms`, 0)),
        timeoutMs,
      );
      function fail(err: Error) {
        clearTimeout(timer);
        reject(err);
      }
      req.on('error', fail);
      req.end(body);
    });
}
