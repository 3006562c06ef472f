import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { parseAllowedTarget } from '../lib/allowed-targets.ts';
import { parseDurationMs } from '../lib/duration.ts';
import { messageOf } from '../lib/message-of.ts';
import { chirpstackApplications } from './chirpstack-applications.ts';

/** The roles a Vigil process can run; one process runs all of them by default. */
export const ROLES = ['gateway', 'mqtt', 'worker', 'scheduler', 'api', 'notifier'] as const;
export type Role = (typeof ROLES)[number];

/**
 * How much of a setting's value may be printed (configuration errors, logs): `value`, a secret,
 * never; `url`, a URL that may hold credentials, without its user, password and query values.
 */
export type SecretKind = 'value' | 'url';

interface Setting<T extends z.ZodType> {
  env: string;
  description: string;
  default: string;
  schema: T;
  secret?: SecretKind;
}

const setting = <T extends z.ZodType>(
  env: string,
  description: string,
  def: string,
  schema: T,
  opts: { secret?: SecretKind } = {},
): Setting<T> => ({
  env,
  description,
  default: def,
  schema,
  ...opts,
});

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().min(0);
const positiveNumber = z.coerce.number().positive();
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => ['true', '1', 'yes'].includes(v));
const url = z.string().url();
const roles = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((r) => r.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.enum(ROLES)).min(1));
const duration = z.string().regex(/^(INF|\d+[smhdw])$/, 'expected INF or a duration such as 30d');
const optionalString = z.string().transform((s) => (s === '' ? undefined : s));
const commaList = (s: string) =>
  s
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** The base64 of 32 bytes (what `openssl rand -base64 32` prints), or empty. */
const secretsKey = optionalString.refine(
  (s) => s === undefined || (/^[A-Za-z0-9+/]{43}=$/.test(s) && Buffer.from(s, 'base64').length === 32),
  'expected the base64 of 32 random bytes, as `openssl rand -base64 32` prints it',
);

/** Host names, addresses and CIDRs, each with one port (`127.0.0.1:9000`), comma-separated. */
const allowedTargetList = z.string().transform((s, ctx) => {
  const list = commaList(s).map((v) => v.toLowerCase());
  for (const v of list) {
    const parsed = parseAllowedTarget(v);
    if (!parsed.ok) {
      ctx.addIssue({ code: 'custom', message: parsed.problem });
      return z.NEVER;
    }
  }
  return list;
});

/** Comma-separated durations (`5s,5m,2h`; a bare number is ms). */
const durationList = z.string().transform((s, ctx) => {
  const list = commaList(s).map(parseDurationMs);
  if (list.length === 0 || list.some((ms) => ms === undefined || ms <= 0)) {
    ctx.addIssue({ code: 'custom', message: 'expected positive durations such as 5s,5m,30m,2h' });
    return z.NEVER;
  }
  return list as number[];
});

/**
 * express's `trust proxy` values, in the form express takes them (`app.set('trust proxy', v)`): a
 * boolean, a hop count, or a list of addresses, CIDRs and proxy-addr's named ranges.
 */
export type TrustProxy = boolean | number | string[];
const trustProxy = z.string().transform((s, ctx): TrustProxy => {
  const text = s.trim();
  if (text === '' || text === 'false') return false;
  if (text === 'true') return true;
  if (/^\d+$/.test(text)) return Number(text);
  const list = text
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  try {
    proxyAddr.compile(list);
  } catch (err) {
    ctx.addIssue({
      code: 'custom',
      message: `expected true, false, a hop count or addresses/CIDRs (${messageOf(err)})`,
    });
    return z.NEVER;
  }
  return list;
});

/**
 * Every configuration key of Vigil: one place, each with its environment variable, description and
 * default. docs/configuration.md is generated from (and checked against) this list.
 */
export const SETTINGS = {
  configFile: setting(
    'VIGIL_CONFIG_FILE',
    "The settings file: one VIGIL_NAME=value line per setting, any setting of this table but this one; the environment wins over it, it wins over the defaults. The default is config/vigil.env of the checkout (ignored by git), and it may be missing; a path given here is relative to the current directory and must exist; empty = none. A file holding a secret's value is refused unless only its owner can read it (`chmod 600`).",
    'config/vigil.env',
    optionalString,
  ),
  roles: setting(
    'VIGIL_ROLES',
    'Comma-separated roles this process runs: gateway, mqtt, worker, scheduler, api, notifier.',
    'gateway,mqtt,worker,scheduler,api,notifier',
    roles,
  ),
  host: setting(
    'VIGIL_HOST',
    'Address the gateway, the read API and the MQTT broker listen on (devices must reach the gateway and the broker).',
    '0.0.0.0',
    z.string().min(1),
  ),
  apiPort: setting(
    'VIGIL_API_PORT',
    'Read API port (also serves /healthz and /readyz, and /metrics when VIGIL_METRICS_TOKEN is set).',
    '8080',
    port,
  ),
  gatewayPort: setting('VIGIL_GATEWAY_PORT', 'HTTP ingestion gateway port.', '8081', port),
  opsPort: setting(
    'VIGIL_OPS_PORT',
    'Port for /healthz, /readyz and /metrics, served by every process (keep it off public networks).',
    '9464',
    port,
  ),
  opsHost: setting(
    'VIGIL_OPS_HOST',
    'Address the ops port listens on. Its /metrics needs no token unless VIGIL_METRICS_TOKEN is set: set one before listening beyond this machine (e.g. 0.0.0.0 for a Prometheus in another container).',
    '127.0.0.1',
    z.string().min(1),
  ),
  httpHeadersTimeoutMs: setting(
    'VIGIL_HTTP_HEADERS_TIMEOUT_MS',
    'Longest an HTTP client (gateway, read API) may take to send a request head, in ms; slower connections are closed.',
    '5000',
    positiveInt,
  ),
  httpRequestTimeoutMs: setting(
    'VIGIL_HTTP_REQUEST_TIMEOUT_MS',
    'Longest an HTTP client may take to send a whole request, body included, in ms. At least VIGIL_HTTP_HEADERS_TIMEOUT_MS (checked at start).',
    '15000',
    positiveInt,
  ),
  metricsToken: setting(
    'VIGIL_METRICS_TOKEN',
    'Bearer token for /metrics. Unset: /metrics is served on the ops port only, without a token; set: it is also served on the API port, and both ask for the token.',
    '',
    optionalString,
    { secret: 'value' },
  ),
  mqttEnabled: setting(
    'VIGIL_MQTT_ENABLED',
    'Run the embedded MQTT broker when the mqtt role is on.',
    'true',
    bool,
  ),
  mqttPort: setting('VIGIL_MQTT_PORT', 'Embedded MQTT broker port.', '1883', port),
  mqttBridgeUrl: setting(
    'VIGIL_MQTT_BRIDGE_URL',
    'External MQTT broker to subscribe to (e.g. mqtt://broker:1883); empty = no bridge.',
    '',
    optionalString,
    { secret: 'url' },
  ),
  mqttBridgeGroup: setting(
    'VIGIL_MQTT_BRIDGE_GROUP',
    'Shared-subscription group name used on the external broker.',
    'vigil',
    z.string().min(1),
  ),
  mqttBridgeShared: setting(
    'VIGIL_MQTT_BRIDGE_SHARED',
    'Use $share/<group>/ subscriptions on the external broker.',
    'true',
    bool,
  ),
  mqttBridgeClientId: setting(
    'VIGIL_MQTT_BRIDGE_CLIENT_ID',
    'Client id base of the bridge on the external broker (persistent session; unique per process); empty = vigil-<group>-<hostname>.',
    '',
    optionalString,
  ),
  mqttBridgeConnections: setting(
    'VIGIL_MQTT_BRIDGE_CONNECTIONS',
    'Parallel bridge connections in one shared-subscription group (1 when shared subscriptions are off).',
    '4',
    positiveInt,
  ),
  mqttBridgeChirpstack: setting(
    'VIGIL_MQTT_BRIDGE_CHIRPSTACK',
    'ChirpStack applications whose MQTT integration events the bridge takes, each with the API key (so the environment) that receives them: `<applicationId>=<API_KEY>`, comma-separated. The bridge subscribes to `application/<applicationId>/device/+/event/+` of each (as `$share/<group>/…` when shared subscriptions are on) and ignores other applications; empty = none. Needs VIGIL_MQTT_BRIDGE_URL.',
    '',
    chirpstackApplications,
    { secret: 'value' },
  ),
  redisUrl: setting('VIGIL_REDIS_URL', 'Redis connection URL.', 'redis://127.0.0.1:6379', url, {
    secret: 'url',
  }),
  keyPrefix: setting(
    'VIGIL_KEY_PREFIX',
    'Prefix of every Redis key and queue name (lets several installations share one Redis).',
    'vigil',
    z.string().regex(/^[a-z0-9_-]{1,32}$/),
  ),
  influxUrl: setting(
    'VIGIL_INFLUX_URL',
    'InfluxDB base URL (v1 HTTP API: /write, /query, /ping).',
    'http://127.0.0.1:8086',
    url,
    { secret: 'url' },
  ),
  influxDatabase: setting(
    'VIGIL_INFLUX_DATABASE',
    'InfluxDB database for history, rollups and events.',
    'vigil',
    z.string().regex(/^[A-Za-z0-9_-]+$/),
  ),
  influxUsername: setting(
    'VIGIL_INFLUX_USERNAME',
    'InfluxDB user (empty = no authentication).',
    '',
    optionalString,
  ),
  influxPassword: setting('VIGIL_INFLUX_PASSWORD', 'InfluxDB password.', '', optionalString, {
    secret: 'value',
  }),
  rawRetention: setting(
    'VIGIL_RAW_RETENTION',
    'Retention of raw values (InfluxDB duration, INF = forever).',
    'INF',
    duration,
  ),
  rollupRetention: setting('VIGIL_ROLLUP_RETENTION', 'Retention of hourly rollups.', 'INF', duration),
  rollupResampleEvery: setting(
    'VIGIL_ROLLUP_RESAMPLE_EVERY',
    'How often the rollup continuous query runs; each run recomputes the hours of the last 2 (so late values up to an hour late are folded in) and costs InfluxDB ~2 µs per raw value scanned, so 1h scans each value twice, 1m about 150 times.',
    '1h',
    duration,
  ),
  logLevel: setting(
    'VIGIL_LOG_LEVEL',
    'pino log level: fatal, error, warn, info, debug, trace, silent.',
    'info',
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  ),
  bodyLimitBytes: setting(
    'VIGIL_BODY_LIMIT_BYTES',
    'Largest accepted gateway body / MQTT payload, in bytes.',
    '262144',
    positiveInt,
  ),
  rateLimitPerSecond: setting(
    'VIGIL_RATE_LIMIT_PER_SECOND',
    'Gateway submissions per second allowed per API key (0 = unlimited).',
    '0',
    nonNegativeInt,
  ),
  backlogHighWater: setting(
    'VIGIL_BACKLOG_HIGH_WATER',
    'Queued payloads above which the gateway answers 503 BACKLOG_FULL to every environment holding at least its share (the mark divided by the environments with a backlog).',
    '500000',
    positiveInt,
  ),
  backlogEnvHighWater: setting(
    'VIGIL_BACKLOG_ENV_HIGH_WATER',
    'Queued payloads of one environment above which it gets 503 BACKLOG_FULL, whatever the others hold (0 = no cap of its own).',
    '100000',
    nonNegativeInt,
  ),
  batchMaxPayloads: setting(
    'VIGIL_BATCH_MAX_PAYLOADS',
    'Most payloads per queue entry written by the gateway (micro-batch size).',
    '200',
    positiveInt,
  ),
  batchMaxDelayMs: setting(
    'VIGIL_BATCH_MAX_DELAY_MS',
    'Longest a payload waits for its micro-batch to fill, in ms; 0 = flush on the next turn of the event loop (batches still fill under load, and a fixed timer caps throughput).',
    '0',
    nonNegativeInt,
  ),
  ingestWriteTimeoutMs: setting(
    'VIGIL_INGEST_WRITE_TIMEOUT_MS',
    'Longest the gateway waits for a micro-batch to reach Redis before answering 503 UNAVAILABLE, in ms.',
    '3000',
    positiveInt,
  ),
  backlogCheckMs: setting(
    'VIGIL_BACKLOG_CHECK_MS',
    'How often the gateway samples the queue backlog for BACKLOG_FULL, in ms.',
    '500',
    positiveInt,
  ),
  queuePartitions: setting(
    'VIGIL_QUEUE_PARTITIONS',
    "Ingest queue partitions (Redis streams). Each is owned by one worker at a time and processed in order, so each device's payloads are applied in the order they were accepted; workers share the partitions. Change only with an empty queue.",
    '8',
    z.coerce.number().int().min(1).max(256),
  ),
  workerBatchMaxPayloads: setting(
    'VIGIL_WORKER_BATCH_MAX_PAYLOADS',
    'Most payloads a worker takes from the queue for one processing step (one state update and one history write); under load steps grow to this size by themselves.',
    '2000',
    positiveInt,
  ),
  workerStepIntervalMs: setting(
    'VIGIL_WORKER_STEP_INTERVAL_MS',
    'Shortest time between the starts of two steps of one step loop, in ms. A payload arriving after a quiet spell is taken at once; under steady load payloads wait up to this long to share a step, whose fixed costs (per device in Redis, per request in InfluxDB) are then paid once for many. A step that filled VIGIL_WORKER_BATCH_MAX_PAYLOADS (a backlog) is followed at once (0 = every step as soon as possible).',
    '400',
    nonNegativeInt,
  ),
  workerConcurrency: setting(
    'VIGIL_WORKER_CONCURRENCY',
    "Processing steps a worker process runs at once, each on its own share of the worker's partitions (one step's waits on Redis and InfluxDB overlap another's parsing); as many as there are partitions by default, so a single worker runs one loop per partition.",
    '8',
    z.coerce.number().int().min(1).max(64),
  ),
  jobAttempts: setting(
    'VIGIL_JOB_ATTEMPTS',
    'Attempts per queued batch before it moves to the dead-letter stream (kept there, never dropped); faults such as InfluxDB down are retried this often.',
    '1000',
    positiveInt,
  ),
  poisonDeliveries: setting(
    'VIGIL_POISON_DELIVERIES',
    'Processing steps that may take a queue entry and never finish (their worker died, or stalled past its lease) before the entry moves to the dead-letter stream: the poison-message limit. Failures a live worker sees count toward VIGIL_JOB_ATTEMPTS instead.',
    '5',
    positiveInt,
  ),
  jobBackoffMs: setting(
    'VIGIL_JOB_BACKOFF_MS',
    'First retry delay after a failed processing step, in ms; it doubles per attempt up to VIGIL_JOB_BACKOFF_MAX_MS.',
    '1000',
    positiveInt,
  ),
  jobBackoffMaxMs: setting(
    'VIGIL_JOB_BACKOFF_MAX_MS',
    'Longest retry delay after a failed processing step, in ms (so work resumes soon after an outage ends). At least VIGIL_JOB_BACKOFF_MS (checked at start).',
    '30000',
    positiveInt,
  ),
  partitionLeaseMs: setting(
    'VIGIL_PARTITION_LEASE_MS',
    "How long a worker's claim on its queue partitions lasts without renewal, in ms: the partitions of a worker that died are taken over after this long.",
    '10000',
    z.coerce.number().int().min(300),
  ),
  sandboxTimeoutMs: setting(
    'VIGIL_SANDBOX_TIMEOUT_MS',
    'CPU time allowed per parser call, per payload, in ms.',
    '50',
    positiveInt,
  ),
  sandboxCpuShare: setting(
    'VIGIL_SANDBOX_CPU_SHARE',
    "Fraction of a worker process's time (0–1) one environment's parsers may use over VIGIL_SANDBOX_CPU_WINDOW_MS; an environment over it has its payloads processed after every other environment's in each step (slowed, never failed). 1 turns this off.",
    '0.25',
    z.coerce.number().gt(0).max(1),
  ),
  sandboxCpuWindowMs: setting(
    'VIGIL_SANDBOX_CPU_WINDOW_MS',
    "The sliding window over which each environment's parser CPU time is compared with VIGIL_SANDBOX_CPU_SHARE, in ms.",
    '60000',
    z.coerce.number().int().min(100),
  ),
  sandboxMemoryMb: setting(
    'VIGIL_SANDBOX_MEMORY_MB',
    "Heap limit of each environment's parser isolate, in MB (each environment's parsers run in an isolate of their own). At worst a sandbox's parsers hold this × VIGIL_SANDBOX_MAX_ISOLATES: 32 MB × 128 = 4 GB with the defaults (a process running the worker and api roles has two sandboxes).",
    '32',
    z.coerce.number().int().min(8),
  ),
  sandboxMaxIsolates: setting(
    'VIGIL_SANDBOX_MAX_ISOLATES',
    "Parser isolates a sandbox keeps, one per environment whose payloads it parses (the worker's; the api role's parser workbench has its own). Beyond it the least recently used environment's isolate is disposed: its next payload rebuilds it and recompiles its parsers (a few ms; globals start afresh; no payload fails). Each costs ~1.3 MB beside what its parsers keep.",
    '128',
    positiveInt,
  ),
  sandboxIsolateIdleMs: setting(
    'VIGIL_SANDBOX_ISOLATE_IDLE_MS',
    "An environment's parser isolate unused for this long is disposed, in ms; its next payload rebuilds it.",
    '900000',
    z.coerce.number().int().min(1000),
  ),
  defaultAvailabilityMinutes: setting(
    'VIGIL_DEFAULT_AVAILABILITY_MINUTES',
    'Silence after which a device gets an Availability event, unless its device or definition says otherwise.',
    '60',
    positiveNumber,
  ),
  availabilityCheckMs: setting(
    'VIGIL_AVAILABILITY_CHECK_MS',
    'How often the scheduler looks for silent devices, in ms.',
    '5000',
    positiveInt,
  ),
  timerCheckMs: setting(
    'VIGIL_TIMER_CHECK_MS',
    'How often the scheduler looks for device timers that came due (rules that wait with `for`, stale rules), in ms; a tick is queued into the device\'s partition when one is. A look that finds none due is one sorted-set read.',
    '250',
    positiveInt,
  ),
  loginTokenTtlSeconds: setting(
    'VIGIL_LOGIN_TOKEN_TTL_SECONDS',
    'Lifetime of tokens issued by POST /login, in seconds.',
    '3600',
    positiveInt,
  ),
  loginMaxFailures: setting(
    'VIGIL_LOGIN_MAX_FAILURES',
    'Failed logins for one username from one client address before that username is locked for that address.',
    '5',
    positiveInt,
  ),
  loginMaxFailuresPerUser: setting(
    'VIGIL_LOGIN_MAX_FAILURES_PER_USER',
    'Failed logins for one username from all addresses together before the username is locked for everyone.',
    '50',
    positiveInt,
  ),
  loginMaxFailuresPerAddress: setting(
    'VIGIL_LOGIN_MAX_FAILURES_PER_ADDRESS',
    'Failed logins from one client address (an IPv6 address counts as its /64), all usernames of an environment together, before that address is locked.',
    '100',
    positiveInt,
  ),
  loginLockSeconds: setting(
    'VIGIL_LOGIN_LOCK_SECONDS',
    'Window for counting failures and length of the lock, in seconds.',
    '900',
    positiveInt,
  ),
  trustProxy: setting(
    'VIGIL_TRUST_PROXY',
    "Which X-Forwarded-For hops to believe for the client address of the read API, as express's `trust proxy`: false (the socket address), true (the left-most address), a hop count, or a comma-separated list of proxy addresses/CIDRs (also loopback, linklocal, uniquelocal).",
    'false',
    trustProxy,
  ),
  publicUrl: setting(
    'VIGIL_PUBLIC_URL',
    'The address people open the console at, when it is not the API port itself (e.g. https://vigil.example.com behind a proxy that terminates TLS). With https, the session cookie is marked Secure; empty = the address the browser used.',
    '',
    optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  ),
  consoleSessionIdleMinutes: setting(
    'VIGIL_CONSOLE_SESSION_IDLE_MINUTES',
    'A console session ends after this many minutes without a request.',
    '60',
    positiveInt,
  ),
  consoleSessionMaxHours: setting(
    'VIGIL_CONSOLE_SESSION_MAX_HOURS',
    'A console session ends this many hours after sign-in, whatever its use.',
    '12',
    positiveInt,
  ),
  consoleSignInPerMinute: setting(
    'VIGIL_CONSOLE_SIGN_IN_PER_MINUTE',
    'Console sign-in attempts accepted per client address (an IPv6 address counts as its /64) and minute, successful or not; each costs a password hash.',
    '10',
    positiveInt,
  ),
  workbenchRunsPerMinutePerSession: setting(
    'VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION',
    "Parser runs one console session or API token may make per minute, in the workbench and through /definitions/run and /definitions/replay (a replay counts one per payload it runs; a default replay takes at most this many payloads); beyond it 429 RATE_LIMITED. At least VIGIL_DEVICE_RECENT_PAYLOADS where the api role runs (checked at start).",
    '2000',
    positiveInt,
  ),
  workbenchRunsPerMinutePerEnv: setting(
    'VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_ENV',
    'Parser runs all sessions and tokens of one environment may make per minute together (a replay counts one per payload it runs); beyond it 429 RATE_LIMITED. At least VIGIL_DEVICE_RECENT_PAYLOADS where the api role runs (checked at start).',
    '4000',
    positiveInt,
  ),
  consoleLiveMs: setting(
    'VIGIL_CONSOLE_LIVE_MS',
    'How often the console looks for changes in an environment that someone is watching, in ms (one look per environment, shared by every open page).',
    '1000',
    z.coerce.number().int().min(50),
  ),
  deviceRecentPayloads: setting(
    'VIGIL_DEVICE_RECENT_PAYLOADS',
    "Recent payloads kept per device for the console (with their outcome; the parser workbench replays them). At most 64 KiB per device: each payload is shortened, and marked so, to 64 KiB divided by this number. 0 = none kept.",
    '20',
    z.coerce.number().int().min(0).max(256),
  ),
  credentialCacheMs: setting(
    'VIGIL_CREDENTIAL_CACHE_MS',
    "How long API keys and tokens are cached in memory: revoking one, or changing or deleting a login token's user, takes effect within this time. Open console live pages check their session as often (every 250 ms to 30 s).",
    '2000',
    nonNegativeInt,
  ),
  catalogCacheMs: setting(
    'VIGIL_CATALOG_CACHE_MS',
    'How long schedulers and the notifier cache environments, pre-parsers, definitions, devices and device settings, in ms (0 = read them on every use): a change reaches them within this time.',
    '1000',
    nonNegativeInt,
  ),
  workerCatalogCacheMs: setting(
    'VIGIL_WORKER_CATALOG_CACHE_MS',
    'How long a worker keeps what it read of the catalog (environments, pre-parsers, definitions, devices, device settings), in ms (0 = read them on every use). Every change made through Vigil — the management API, the console, `vigil`, automatic device creation — reaches the worker at its next step (the catalog epochs, docs/processing.md), so this bounds only changes made around Vigil, such as a restored backup. A device that sends once a minute finds its records cached only when this is longer than that.',
    '600000',
    nonNegativeInt,
  ),
  exportLimitPerMonth: setting(
    'VIGIL_EXPORT_LIMIT_PER_MONTH',
    'Successful exports per environment and data point per calendar month (0 = unlimited).',
    '1',
    nonNegativeInt,
  ),
  eventsKeptPerEnv: setting(
    'VIGIL_EVENTS_KEPT_PER_ENV',
    'Events kept per environment in Redis (oldest dropped first; InfluxDB keeps all).',
    '100000',
    positiveInt,
  ),
  ingestLogSize: setting(
    'VIGIL_INGEST_LOG_SIZE',
    'Ingestion outcomes kept per environment.',
    '1000',
    positiveInt,
  ),
  eventOutboxMaxEntries: setting(
    'VIGIL_EVENT_OUTBOX_MAX_ENTRIES',
    'Most events kept in the event outbox stream. Entries are trimmed once every reader (the InfluxDB writer, the notifier) has them; a reader that falls further behind than this (a notifier role that no longer runs) loses the oldest, with an error in the log.',
    '1000000',
    positiveInt,
  ),
  secretsKey: setting(
    'VIGIL_SECRETS_KEY',
    'Key that encrypts notification secrets at rest (AES-256-GCM): the base64 of 32 random bytes (`openssl rand -base64 32`). Without it, channels cannot be created. Keep it with the backups of Redis, apart from them.',
    '',
    secretsKey,
    { secret: 'value' },
  ),
  notifyAllowedHosts: setting(
    'VIGIL_NOTIFY_ALLOWED_HOSTS',
    'Comma-separated host:port entries that webhook and Slack channels may reach although the host resolves to a loopback, private, link-local or other non-public address: a host name, an address or a CIDR, each with the one port it admits (127.0.0.1:9000 for a receiver on this machine, hooks.internal:443, 10.0.0.0/8:8443, [::1]:9000). An entry without a port is refused at start.',
    '',
    allowedTargetList,
  ),
  smtpUrl: setting(
    'VIGIL_SMTP_URL',
    'SMTP server of email channels (e.g. smtp://127.0.0.1:2525, smtps://user:pass@mail.example.com); empty = email channels cannot deliver.',
    '',
    optionalString,
    { secret: 'url' },
  ),
  smtpFrom: setting(
    'VIGIL_SMTP_FROM',
    'Sender address of notification emails.',
    'vigil@localhost',
    z.string().min(3),
  ),
  notifyRetrySchedule: setting(
    'VIGIL_NOTIFY_RETRY_SCHEDULE',
    'Delays before each retry of a failed notification, comma-separated (ms, s, m, h, d); one attempt more than delays. After the last, the notification is kept as failed (`vigil notify failed`).',
    '5s,5m,30m,2h,5h,10h,10h',
    durationList,
  ),
  notifyTimeoutMs: setting(
    'VIGIL_NOTIFY_TIMEOUT_MS',
    'Longest a notification delivery (HTTP request or SMTP session) may take, in ms; slower counts as a failed attempt and is retried.',
    '10000',
    positiveInt,
  ),
  notifyConcurrency: setting(
    'VIGIL_NOTIFY_CONCURRENCY',
    'Notifications one notifier process delivers at once.',
    '50',
    z.coerce.number().int().min(1).max(1000),
  ),
  notifyDigestThreshold: setting(
    'VIGIL_NOTIFY_DIGEST_THRESHOLD',
    'Notifications one channel receives within a flood window before the rest of that window is held and sent as one digest.',
    '20',
    positiveInt,
  ),
  notifyFloodWindowMs: setting(
    'VIGIL_NOTIFY_FLOOD_WINDOW_MS',
    "Length of a channel's flood window, in ms: it starts with the first notification after the previous window ended.",
    '60000',
    positiveInt,
  ),
  notifyStalledIntervalMs: setting(
    'VIGIL_NOTIFY_STALLED_INTERVAL_MS',
    'How long a delivery in progress stays claimed by a notifier without renewal, in ms (and how often notifiers look for claims that lapsed): the deliveries of a notifier that died are taken over after about this long, without counting as an attempt. At least VIGIL_NOTIFY_TIMEOUT_MS (checked at start).',
    '30000',
    z.coerce.number().int().min(500),
  ),
  notifyGatherMs: setting(
    'VIGIL_NOTIFY_GATHER_MS',
    'How long a notifier waits, after reading events from the event outbox, before it reads again, in ms: an event after a quiet spell is routed at once, the events that follow it wait up to this long to be routed and enqueued together, whose Redis round trips are then paid once for many instead of once per event (0 = read again at once).',
    '250',
    z.coerce.number().int().min(0).max(10_000),
  ),
  notifyReclaimIdleMs: setting(
    'VIGIL_NOTIFY_RECLAIM_IDLE_MS',
    'Events a notifier read from the event outbox but did not finish routing are taken over by another notifier after this long, in ms.',
    '30000',
    z.coerce.number().int().min(100),
  ),
  notifyFailedKept: setting(
    'VIGIL_NOTIFY_FAILED_KEPT',
    'Failed notifications kept for `vigil notify failed` and `retry` (all environments together; oldest dropped first).',
    '10000',
    positiveInt,
  ),
  notifyFailedKeptSeconds: setting(
    'VIGIL_NOTIFY_FAILED_KEPT_SECONDS',
    'How long a failed notification is kept, in seconds.',
    '604800',
    positiveInt,
  ),
  notifyLogSize: setting(
    'VIGIL_NOTIFY_LOG_SIZE',
    'Delivery attempts kept per environment for `vigil notify log`.',
    '1000',
    positiveInt,
  ),
  notifySecretGraceSeconds: setting(
    'VIGIL_NOTIFY_SECRET_GRACE_SECONDS',
    'After `vigil channel rotate-secret`, how long webhooks are signed with the old secret as well as the new one, in seconds.',
    '86400',
    nonNegativeInt,
  ),
  notifyMinRemindEveryMs: setting(
    'VIGIL_NOTIFY_MIN_REMIND_EVERY_MS',
    'Shortest reminder interval a route may have (`--remind-every`), in ms: a lower one is refused when the route is created.',
    '60000',
    positiveInt,
  ),
  auditRetentionDays: setting(
    'VIGIL_AUDIT_RETENTION_DAYS',
    'How long the audit log (every management change and alarm acknowledgement, `/audit/list`, `vigil audit`) keeps an entry, in days; older ones are dropped as new ones come.',
    '90',
    positiveInt,
  ),
  demo: setting(
    'VIGIL_DEMO',
    "Only for `npm run demo`, which sets it: accept the demo's published API key, user password and VIGIL_SECRETS_KEY (config/provisioning/demo), and listen on loopback addresses only. Off, the published key and password are refused (401) and the published secrets key stops the start.",
    'false',
    bool,
  ),
  shutdownTimeoutMs: setting(
    'VIGIL_SHUTDOWN_TIMEOUT_MS',
    'Longest a graceful shutdown waits before exiting anyway, in ms.',
    '8000',
    positiveInt,
  ),
} as const;

type Settings = typeof SETTINGS;
/** Vigil's whole configuration, parsed and typed. */
export type Config = { [K in keyof Settings]: z.output<Settings[K]['schema']> };
