/** HTTP load with autocannon: fixed connections, fixed duration, 2xx/s and latency percentiles. */
import autocannon, { type RequestSpec } from 'autocannon';
import { lockstep } from './lockstep.ts';

export interface HttpLoadOptions {
  url: string;
  connections: number;
  durationS: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Body of the n-th request of a connection (varies device names), or one fixed body. */
  body?: string | ((n: number) => string);
  /** Requests per second over all connections; as many as they get answered when absent. */
  rate?: number | undefined;
}

export interface HttpLoadResult {
  /** 2xx answers per second. */
  okPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

let bodyCounter = 0;

export async function runHttpLoad(opts: HttpLoadOptions): Promise<HttpLoadResult> {
  await lockstep();
  const { body } = opts;
  const request: RequestSpec =
    typeof body === 'function'
      ? { setupRequest: (req) => ({ ...req, body: body(bodyCounter++) }) }
      : body === undefined
        ? {}
        : { body };
  const result = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.durationS,
    method: opts.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...opts.headers },
    requests: [request],
    timeout: 10,
    ...(opts.rate ? { overallRate: opts.rate } : {}),
  });
  return {
    okPerSecond: result['2xx'] / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
