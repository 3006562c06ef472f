/** The part of autocannon's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    duration: number;
    statusCodeStats: Record<string, { count: number }>;
  }
  interface RequestSpec {
    method?: string;
    path?: string;
    body?: string | Buffer;
    headers?: Record<string, string>;
    setupRequest?: (req: RequestSpec, context: Record<string, unknown>) => RequestSpec;
  }
  interface Options extends RequestSpec {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    /** Requests per second over all connections. */
    overallRate?: number;
    timeout?: number;
    requests?: RequestSpec[];
  }
  function autocannon(opts: Options): Promise<Result> & { stop(): void };
  export default autocannon;
  export type { Result, Options, RequestSpec };
}
