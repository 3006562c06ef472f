/**
 * The management API at a large fleet's size, under ingestion at half the sustained end-to-end rate:
 *  - import: `POST /devices/import` of `--import-rows` new devices (100,000) as one CSV, against the
 *    ceiling of a bare ioredis pipeline writing the same records (each device's hash and its places
 *    in the device list, the label indexes and the set of devices never heard from, in batches of the
 *    import's size, without the import's checks) under the same ingestion just before (and,
 *    for reference, on the idle host before the ingestion starts); meanwhile the ingestion's
 *    processed rate against what it offered, and how long its backlog takes to empty after;
 *  - a paged `/devices/list` (100 devices after a random name) of the fleet imported, its p99
 *    against `sensors/details`' in the same windows (both loads at once, 100 requests a second
 *    each: a stall of the host, such as InfluxDB compacting, lands on both);
 *  - the console's fleet page at 1,000 devices and again at the fleet imported, its p99 each, at 10
 *    pages a second.
 */
import { Redis as IORedis } from 'ioredis';
import { paths } from '../../src/console/views/format.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { encodeDevice } from '../../src/tenancy/records.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { BENCH_ENV, BENCH_SPEC, deviceName } from '../lib/provision.ts';
import { percentile } from '../lib/stats.ts';
import { signIn } from './console.ts';
import { Ingestion, processedCount } from './end-to-end.ts';
import { halfMaxRate } from './read-api.ts';

const CONNECTIONS = 10;
const PAGE = 100;
/**
 * Requests per second of the latency comparisons: well below saturation, so that a p99 says how
 * long one request takes, not how long the queue of ten connections is.
 */
const READ_RATE = 100;
const FLEET_RATE = 10;
const USERNAME = 'bench-admin';
const PASSWORD = 'bench-admin-password';

const importedName = (i: number) => `imported-${String(i).padStart(7, '0')}`;

function importCsv(rows: number): string {
  const lines = ['deviceName,displayName,definitionName,definitionIsPublic,labels'];
  for (let i = 0; i < rows; i++)
    lines.push(`${importedName(i)},Imported ${i},${BENCH_SPEC.name},false,site=s${i % 50};row=${i % 7}`);
  return `${lines.join('\n')}\n`;
}

/** Rows/s of a bare pipeline writing `rows` device records as the import writes them, into a scratch prefix. */
async function pipelineCeiling(redisUrl: string, rows: number): Promise<number> {
  const redis = new IORedis(redisUrl);
  const keys = createKeys('ceiling-import');
  const createdUTC = new Date().toISOString();
  try {
    const started = performance.now();
    for (let i = 0; i < rows; i += 2000) {
      const pipe = redis.pipeline();
      const names = Array.from({ length: Math.min(2000, rows - i) }, (_, j) => importedName(i + j));
      pipe.zadd(keys.devices(BENCH_ENV), ...names.flatMap((n) => [0, n]));
      pipe.zadd(keys.unheardDevices(BENCH_ENV), ...names.flatMap((n) => [0, n]));
      pipe.zadd(keys.labelIndex(BENCH_ENV, 'site'), ...names.flatMap((n, j) => [0, `s${(i + j) % 50}\n${n}`]));
      pipe.zadd(keys.labelIndex(BENCH_ENV, 'row'), ...names.flatMap((n, j) => [0, `${(i + j) % 7}\n${n}`]));
      for (const [j, n] of names.entries()) {
        const record = encodeDevice({
          env: BENCH_ENV,
          deviceName: n,
          displayName: `Imported ${i + j}`,
          definitionName: BENCH_SPEC.name,
          definitionIsPublic: false,
          labels: { site: `s${(i + j) % 50}`, row: String((i + j) % 7) },
          revision: 1,
          createdUTC,
        });
        pipe.hset(keys.device(BENCH_ENV, n), { ...record, revision: '1' });
      }
      await pipe.exec();
    }
    return rows / ((performance.now() - started) / 1000);
  } finally {
    const cleanup = redis.pipeline();
    for (const k of await redis.keys('ceiling-import:*')) cleanup.del(k);
    await cleanup.exec();
    redis.disconnect();
  }
}

export async function runManagement(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const rows = opts.importRows;
  const rate = halfMaxRate(ctx);
  const idleCeiling = await pipelineCeiling(ctx.redisUrl, rows);
  report.add({
    id: 'ceiling.import-pipeline.idle',
    label: `bare ioredis pipeline writing ${rows} device records, idle host`,
    unit: 'rows/s',
    runs: [idleCeiling],
  });

  const bv = await startEndToEndVigil(ctx, { label: 'management' });
  const ingestion = new Ingestion(bv);
  const redis = connectRedis(ctx.redisUrl, 'command', 'bench-management');
  try {
    const admin = createTenancyAdmin(adminDeps(redis, createKeys(bv.settings.keyPrefix)));
    const { token } = await admin.createToken(BENCH_ENV, 'bench-admin', 0, ['read', 'write', 'admin']);
    await admin.createUser(BENCH_ENV, USERNAME, PASSWORD, 'admin');
    const base = `http://127.0.0.1:${bv.vigil.ports.api}`;
    const auth = { authorization: `Bearer ${token}` };
    const cookie = await signIn(base, USERNAME, PASSWORD);
    const fleetP99 = async () => {
      const res = await runHttpLoad({
        url: `${base}${paths.fleet}`,
        method: 'GET',
        connections: CONNECTIONS,
        durationS: opts.measureS,
        headers: { cookie, 'accept-encoding': 'gzip' },
        rate: FLEET_RATE,
      });
      if (res.non2xx > 0 || res.okPerSecond === 0)
        throw new Error(`fleet page: ${res.non2xx} non-2xx answers`);
      return res.p99Ms;
    };

    ctx.log(`management: ingestion at ${rate} payloads/s`);
    await ingestion.start(rate, opts.warmupS + 4 * opts.measureS + 600, opts.devices);
    await sleep(opts.warmupS * 1000);
    const fleetSmall: number[] = [];
    for (let r = 0; r < opts.runs; r++) fleetSmall.push(await fleetP99());

    ctx.log(`management: the ceiling of the import, ingesting ${rate}/s`);
    report.add({
      id: 'ceiling.import-pipeline',
      label: `bare ioredis pipeline writing ${rows} device records (ingesting ${rate}/s)`,
      unit: 'rows/s',
      runs: [await pipelineCeiling(ctx.redisUrl, rows)],
    });
    ctx.log(`management: importing ${rows} devices`);
    const csv = importCsv(rows);
    const offeredBefore = ingestion.accepted();
    const processedBefore = await processedCount(bv.worker);
    const started = performance.now();
    const res = await fetch(`${base}/devices/import`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/csv' },
      body: csv,
    });
    const answer = (await res.json()) as { data?: { created: number } };
    const seconds = (performance.now() - started) / 1000;
    if (res.status !== 200 || answer.data?.created !== rows)
      throw new Error(`import: HTTP ${res.status}, ${JSON.stringify(answer).slice(0, 300)}`);
    const offered = ingestion.accepted() - offeredBefore;
    const processed = (await processedCount(bv.worker)) - processedBefore;
    // The backlog the import left: the worker's processed count catching up with what was accepted.
    const until = ingestion.accepted();
    const caughtUpAt = performance.now();
    let drainedS = Number.NaN;
    while (performance.now() - caughtUpAt < 30_000) {
      if ((await processedCount(bv.worker)) >= processedBefore + (until - offeredBefore)) {
        drainedS = (performance.now() - caughtUpAt) / 1000;
        break;
      }
      await sleep(100);
    }
    report.add({
      id: 'manage.import',
      label: `import of ${rows} devices in one request (ingesting ${rate}/s)`,
      unit: 'rows/s',
      runs: [rows / seconds],
      ceiling: 'ceiling.import-pipeline',
      target: { min: 0.5, ratioOf: 'ceiling.import-pipeline' },
    });
    report.add({
      id: 'manage.import.ingestion',
      label: 'ingestion during the import: processed ÷ offered',
      unit: '×',
      runs: [offered > 0 ? processed / offered : 1],
      target: { min: 0.9 },
    });
    report.add({
      id: 'manage.import.drain',
      label: 'backlog back to 0 after the import',
      unit: 's',
      runs: [drainedS],
      target: { max: 10 },
    });

    ctx.log('management: paged devices/list and sensors/details');
    const total = opts.devices + rows;
    const pick = () => importedName(Math.floor(Math.random() * rows));
    const listP99: number[] = [];
    const detailsP99: number[] = [];
    for (let r = 0; r < opts.runs; r++) {
      const [list, details] = await Promise.all([
        runHttpLoad({
          url: `${base}/devices/list`,
          connections: CONNECTIONS,
          durationS: opts.measureS,
          headers: auth,
          body: () => JSON.stringify({ limit: PAGE, after: pick() }),
          rate: READ_RATE,
        }),
        runHttpLoad({
          url: `${base}/sensors/details`,
          connections: CONNECTIONS,
          durationS: opts.measureS,
          headers: { authorization: `Bearer ${bv.provisioned.token}` },
          body: (n) => JSON.stringify({ deviceName: deviceName(n % opts.devices), sensorName: 'Temperature' }),
          rate: READ_RATE,
        }),
      ]);
      if (list.non2xx > 0 || details.non2xx > 0)
        throw new Error(`devices/list: ${list.non2xx}, sensors/details: ${details.non2xx} non-2xx answers`);
      listP99.push(list.p99Ms);
      detailsP99.push(details.p99Ms);
    }
    report.add({
      id: 'manage.list.p99',
      label: `/devices/list, pages of ${PAGE} of ${total} devices, p99`,
      unit: 'ms',
      runs: listP99,
    });
    report.add({
      id: 'manage.details.p99',
      label: 'sensors/details in the same minutes, p99',
      unit: 'ms',
      runs: detailsP99,
    });
    report.add({
      id: 'manage.list.ratio',
      label: 'paged /devices/list p99 ÷ sensors/details p99',
      unit: '×',
      runs: listP99.map((p, i) => p / (detailsP99[i] ?? p)),
      target: { max: 2 },
    });

    ctx.log('management: the fleet page of the imported fleet');
    const fleetLarge: number[] = [];
    for (let r = 0; r < opts.runs; r++) fleetLarge.push(await fleetP99());
    report.add({
      id: 'manage.fleet.small.p99',
      label: `console fleet page, ${opts.devices} devices, p99`,
      unit: 'ms',
      runs: fleetSmall,
    });
    report.add({
      id: 'manage.fleet.large.p99',
      label: `console fleet page, ${total} devices, p99`,
      unit: 'ms',
      runs: fleetLarge,
    });
    report.add({
      id: 'manage.fleet.ratio',
      label: `fleet page p99 at ${total} ÷ at ${opts.devices} devices`,
      unit: '×',
      runs: [percentile(fleetLarge, 50) / percentile(fleetSmall, 50)],
      target: { max: 2 },
    });
  } finally {
    await ingestion.stop();
    await closeRedis(redis);
    await bv.stop();
  }
}
