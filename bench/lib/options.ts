/**
 * Command-line options of `npm run bench`: which scenarios run, for how long, how often.
 * `--quick` is a ~2-minute smoke run; the default full run stays well under 30 minutes.
 */
/**
 * In running order: the drain rate is where the end-to-end search starts, and the sustained
 * end-to-end rate sets the load of the scenarios after it (half of it under the read API, the
 * console and notify-latency; a little more than it in the alternated ones).
 */
export const SCENARIOS = [
  'ceilings',
  'gateway',
  'mqtt',
  'drain',
  'e2e',
  'fleet',
  'read',
  'console',
  'management',
  'notify',
  'notify-latency',
  'alerting',
  'recent-payloads',
  'late-writes',
  'conditions',
  'lorawan',
  'tenants',
  'backfill',
  'timers',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface BenchOptions {
  scenarios: Scenario[];
  quick: boolean;
  soak: boolean;
  /** Repetitions of each measured window; the table shows medians. */
  runs: number;
  /** Seconds of warm-up before each measured window. */
  warmupS: number;
  /** Seconds of each measured window (accept rates, ceilings, read API). */
  measureS: number;
  /** Seconds of the sustained end-to-end window (the issue asks for 60). */
  sustainS: number;
  /** Payloads queued before the drain scenario starts its worker. */
  drainPayloads: number;
  /** Worker processes the drain scenario starts on the full queue (default 1). */
  drainWorkers: number;
  /** Seconds of the soak run. */
  soakS: number;
  /** Payloads/s of the soak; default half the last sustained end-to-end rate. */
  soakRate: number | undefined;
  /** Devices that send (`--devices`, default 1,000); the read API's batchList asks for 100 of them. */
  devices: number;
  /**
   * Uplinks per second the lorawan scenario offers each configuration (`--lorawan-rate`, default
   * 1,500): a rate both keep up with on 2 cores, so that CPU per uplink is compared at equal load.
   */
  lorawanRate: number;
  /** Devices of the lorawan scenario's fleet shape (`--lorawan-fleet`, default 20,000). */
  lorawanFleet: number;
  /** Devices of the fleet scenario (`--fleet-devices`, default 100,000; 20,000 with --quick). */
  fleetDevices: number;
  /** Payloads/s of the fleet scenario's sustained windows (`--fleet-offer`); given, its search is skipped. */
  fleetOffer: number | undefined;
  /** Payloads/s of the sustained end-to-end window; given, the saturation and search are skipped. */
  e2eRate: number | undefined;
  /** End-to-end with the worker in a second Vigil process (entry roles in the first); `--single` turns it off. */
  split: boolean;
  /** Write V8 CPU profiles of the Vigil process to bench/results/profiles. */
  profile: boolean;
  /**
   * Every rule of the bench definition waits (`for: 1s`) and every data point has a stale rule
   * (`after: 30m`): the state step's cost of conditions that wait.
   */
  conditions: boolean;
  /**
   * Vigil settings for every Vigil process (`--set queuePartitions=2`), for experiments; they win
   * over a scenario's own settings.
   */
  settings: Record<string, string>;
  /** Webhooks the notify scenario delivers (one event each, spread over its 100 channels). */
  notifyCount: number;
  /**
   * Events per second the notify scenario puts into the outbox (`--notify-rate`), instead of all at
   * once: what a notification costs at the pace ingestion makes them.
   */
  notifyRate: number | undefined;
  /**
   * Requests per second the read API scenario sends to `sensors/details` (`--read-rate`), instead
   * of as many as 10 connections get answered: CPU per request compared at equal load, not at each code's own
   * saturation (where a slower build also batches more per event-loop turn).
   */
  readRate: number | undefined;
  /** Fleet pages per second the console scenario asks for (`--fleet-rate`), as `--read-rate` does. */
  fleetRate: number | undefined;
  /** Devices the management scenario imports in one request (`--import-rows`). */
  importRows: number;
  /**
   * Environments of the tenants scenario (`--tenants`, default 100), each with its own private
   * definition and API key; a tenth of them also have devices of one public definition.
   */
  tenants: number;
  /** Values the backfill scenario uploads (over 24 hours, for 100 data points). */
  backfillValues: number;
  /**
   * `--lockstep DIR:ME:OTHER`: wait for another run before every HTTP load and every window of an
   * end-to-end feature cost (lib/lockstep.ts).
   */
  lockstep: string | undefined;
  /**
   * `--config a|b`: the end-to-end feature costs run only that configuration, window after window
   * (with `--e2e-rate`), for bench/side-by-side.ts to set against the other run's in the same minutes.
   */
  config: 'a' | 'b' | undefined;
  /** `--results FILE`: where the report goes instead of bench/results/latest.json. */
  results: string | undefined;
}

const usage = `usage: npm run bench -- [--quick] [--soak] [--only ${SCENARIOS.join(',')}] [--runs N]
       [--measure S] [--sustain S] [--soak-seconds S] [--soak-rate N] [--drain-payloads N] [--drain-workers N] [--e2e-rate N] [--single] [--profile]
       [--notify-count N] [--notify-rate N] [--read-rate N] [--fleet-rate N] [--import-rows N] [--tenants N] [--backfill-values N] [--conditions]
       [--devices N] [--fleet-devices N] [--fleet-offer N] [--lorawan-rate N] [--lorawan-fleet N]
       [--lockstep DIR:ME:OTHER] [--config a|b] [--results FILE]
       [--set <config key>=<value>[,<key>=<value>…]]`;

export function parseOptions(argv: readonly string[]): BenchOptions {
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${arg}\n${usage}`);
    const [name, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    const next = argv[i + 1];
    if (inline !== undefined) flags.set(name, inline);
    else if (next !== undefined && !next.startsWith('--')) {
      flags.set(name, next);
      i++;
    } else flags.set(name, true);
  }
  const known = ['quick', 'soak', 'only', 'runs', 'measure', 'sustain', 'soak-seconds', 'soak-rate'];
  for (const name of flags.keys()) {
    if (
      ![
        ...known,
        'drain-payloads',
        'drain-workers',
        'e2e-rate',
        'single',
        'profile',
        'set',
        'help',
        'notify-count',
        'notify-rate',
        'read-rate',
        'fleet-rate',
        'import-rows',
        'tenants',
        'backfill-values',
        'conditions',
        'lockstep',
        'config',
        'results',
        'devices',
        'fleet-devices',
        'fleet-offer',
        'lorawan-rate',
        'lorawan-fleet',
      ].includes(name)
    )
      throw new Error(`unknown option --${name}\n${usage}`);
  }
  if (flags.has('help')) throw new Error(usage);
  const quick = flags.has('quick');
  const soak = flags.has('soak');
  const num = (name: string, fallback: number): number => {
    const v = flags.get(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (v === true || !Number.isFinite(n) || n <= 0)
      throw new Error(`--${name} needs a positive number\n${usage}`);
    return n;
  };
  const only = flags.get('only');
  const scenarios =
    typeof only === 'string'
      ? only.split(',').map((s) => {
          if (!(SCENARIOS as readonly string[]).includes(s))
            throw new Error(`unknown scenario ${s}\n${usage}`);
          return s as Scenario;
        })
      : soak
        ? []
        : [...SCENARIOS];
  const rate = flags.get('soak-rate');
  const set = flags.get('set');
  const lockstep = flags.get('lockstep');
  if (lockstep === true) throw new Error(`--lockstep needs DIR:ME:OTHER\n${usage}`);
  const config = flags.get('config');
  if (config !== undefined && config !== 'a' && config !== 'b')
    throw new Error(`--config expects a or b\n${usage}`);
  if (config !== undefined && !flags.has('e2e-rate'))
    throw new Error(`--config needs --e2e-rate: both runs must offer the same rate\n${usage}`);
  const results = flags.get('results');
  if (results === true) throw new Error(`--results needs a file\n${usage}`);
  const settings: Record<string, string> = {};
  if (typeof set === 'string') {
    for (const pair of set.split(',')) {
      const [key, value] = pair.split('=', 2);
      if (!key || value === undefined) throw new Error(`--set expects key=value, got ${pair}\n${usage}`);
      settings[key] = value;
    }
  }
  return {
    scenarios,
    quick,
    soak,
    runs: num('runs', quick ? 1 : 3),
    warmupS: quick ? 2 : 5,
    measureS: num('measure', quick ? 5 : 10),
    sustainS: num('sustain', quick ? 15 : 60),
    drainPayloads: num('drain-payloads', quick ? 40_000 : 150_000),
    drainWorkers: Math.round(num('drain-workers', 1)),
    soakS: num('soak-seconds', quick ? 60 : 300),
    soakRate: rate === undefined ? undefined : num('soak-rate', 1),
    e2eRate: flags.has('e2e-rate') ? num('e2e-rate', 1) : undefined,
    devices: Math.round(num('devices', 1000)),
    fleetDevices: Math.round(num('fleet-devices', quick ? 20_000 : 100_000)),
    fleetOffer: flags.has('fleet-offer') ? num('fleet-offer', 1) : undefined,
    lorawanRate: num('lorawan-rate', 1500),
    lorawanFleet: Math.round(num('lorawan-fleet', 20_000)),
    split: !flags.has('single'),
    conditions: flags.has('conditions'),
    profile: flags.has('profile'),
    settings,
    notifyCount: Math.round(num('notify-count', quick ? 10_000 : 60_000)),
    notifyRate: flags.has('notify-rate') ? num('notify-rate', 1) : undefined,
    readRate: flags.has('read-rate') ? num('read-rate', 1) : undefined,
    fleetRate: flags.has('fleet-rate') ? num('fleet-rate', 1) : undefined,
    importRows: Math.round(num('import-rows', quick ? 10_000 : 100_000)),
    tenants: Math.round(num('tenants', 100)),
    backfillValues: Math.round(num('backfill-values', quick ? 100_000 : 1_000_000)),
    lockstep: typeof lockstep === 'string' ? lockstep : undefined,
    config,
    results,
  };
}
