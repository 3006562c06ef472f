/**
 * Minimal InfluxDB v1 HTTP API client (served by InfluxDB 1.x, 2.x's v1 compatibility and 3.x):
 * `/ping`, `/query` (InfluxQL) and `/write` (line protocol). Keep-alive connections via fetch.
 */
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

export class InfluxError extends Error {
  override name = 'InfluxError';
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

export function createInfluxClient(opts: InfluxClientOptions): InfluxClient {
  const base = opts.url.replace(/\/$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const auth = (params: URLSearchParams) => {
    if (opts.username) params.set('u', opts.username);
    if (opts.password) params.set('p', opts.password);
  };
  return {
    database: opts.database,
    async ping() {
      try {
        const res = await fetch(`${base}/ping`, { signal: AbortSignal.timeout(Math.min(timeoutMs, 2000)) });
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
      auth(params);
      const method = qopts.method ?? (/^\s*(select|show)/i.test(q) ? 'GET' : 'POST');
      // Answers are small and local: gzip (fetch asks for it by default) costs CPU on both sides.
      const headers = { 'accept-encoding': 'identity' };
      const res =
        method === 'GET'
          ? await fetch(`${base}/query?${params.toString()}`, {
              headers,
              signal: AbortSignal.timeout(timeoutMs),
            })
          : await fetch(`${base}/query`, {
              method: 'POST',
              headers,
              body: params,
              signal: AbortSignal.timeout(timeoutMs),
            });
      const text = await res.text();
      if (!res.ok)
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
      auth(params);
      const res = await fetch(`${base}/write?${params.toString()}`, {
        method: 'POST',
        body: lines,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status !== 204) {
        const text = await res.text();
        throw new InfluxError(`InfluxDB write failed (${res.status}): ${text.slice(0, 300)}`, res.status);
      }
      await res.arrayBuffer();
    },
  };
}
