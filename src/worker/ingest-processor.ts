/**
 * Processing of one worker step: pre-parse → resolve devices → parse → convert → store state →
 * write history (which finishes after the result is returned); the outcomes go to the ingestion
 * log in the MULTI that acknowledges the step. Per-payload problems are logged and never fail the
 * step; only infrastructure faults (Redis, InfluxDB) and state stored in a layout this version does
 * not know (STATE_LAYOUT_UNKNOWN: a migration has not run) fail it, so the worker retries the whole step
 * — which is safe, because state (by measurement time) and history (by timestamp) are idempotent,
 * and the ingestion log, which is not, is written only by the acknowledgement that ends the retries.
 *
 * A fault that depends on the data of one payload or device (an exception in a phase, the state
 * script refusing a device) is not the infrastructure's and must not hold up the step: those
 * payloads fail alone (PROCESSING_FAILED, listed in `failed` for the dead-letter stream) and the
 * rest of the step goes on.
 */
import { isAppError } from '../errors/app-error.ts';
import type { Status } from '../domain/types.ts';
import { valueLineOf, type ContactPoint, type HistoryWriter } from '../history/history-writer.ts';
import type { IngestLog } from '../ingest/ingest-log.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { DeviceApplied, StateGuard, StateStore } from '../state/state-store.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import { convertReadings, type ConvertedDevice } from './convert.ts';
import { createFailures, type Failures } from './failures.ts';
import type { LateWrites } from './late-writes.ts';
import { OutcomeLog, type FailedPayload } from './outcomes.ts';
import { parseReadings } from './parse.ts';
import type { ParserFairness } from './parser-fairness.ts';
import { preparse } from './preparse.ts';
import type { RecentPayloadKeys } from '../recent-payloads/recent-payload-keys.ts';
import type { RecentPayloadWriter } from '../recent-payloads/recent-payload-writer.ts';
import { recentPayloadEntries } from './recent-payload-entries.ts';
import { resolveDevices, type NetworkDevices } from './resolve.ts';
import { addTicks, splitTicks } from './ticks.ts';

export interface IngestProcessorDeps {
  catalog: Catalog;
  sandbox: Sandbox;
  state: StateStore;
  history: HistoryWriter;
  ingestLog: IngestLog;
  log: Logger;
  defaultAvailabilityMinutes: number;
  /**
   * Recent payloads kept per device (VIGIL_DEVICE_RECENT_PAYLOADS), written by `writer` once the
   * step is acknowledged; none when absent or 0.
   */
  recentPayloads?: { keys: RecentPayloadKeys; count: number; writer: RecentPayloadWriter };
  /**
   * Raw retention (VIGIL_RAW_RETENTION) in ms; readings older than it are refused
   * (TIMESTAMP_BEYOND_RETENTION). Undefined: kept forever.
   */
  rawRetentionMs?: number | undefined;
  /** Records values written into closed hours with the acknowledgement (none: not recorded). */
  lateWrites?: LateWrites;
  clock?: () => number;
  /** Names the environments whose payloads wait behind the others' in a step (parser-fairness.ts). */
  fairness?: Pick<ParserFairness, 'slowedAmong'>;
  /** Told of the payloads that waited behind other environments' in a step. */
  onSlowed?: (items: readonly IngestItem[]) => void;
  /**
   * Finds network servers' devices by DevEUI and creates those an API key may create; without it
   * they are found by name only.
   */
  networkDevices?: NetworkDevices;
}

export interface ProcessResult {
  payloads: number;
  /** Device timer ticks in the step (ticks.ts): no payloads. */
  ticks?: number;
  values: number;
  staleValues: number;
  /**
   * Settles once history is written (state already is when the result comes), so the worker can
   * start its next step meanwhile; the entries are acknowledged after. It gives the commands that
   * record what the step wrote late (late-writes.ts), run with the acknowledgement.
   */
  written?: Promise<RedisCommand[]>;
  /** The commands that write the step's ingestion-log entries, run with its acknowledgement. */
  logCommands?: RedisCommand[];
  /** Runs once the step's acknowledgement landed (what must not be written twice nor before it). */
  acknowledged?: () => void;
  /**
   * Payloads whose processing failed on their own data: the acknowledgement moves them to the
   * dead-letter stream (the rest of their queue entries is done).
   */
  failed?: FailedPayload[];
}

/** A step whose state takes this long is logged (warn), with the time of each phase. */
const SLOW_STEP_MS = 500;
/**
 * Readings are refused this long before raw retention would have InfluxDB drop them: the write
 * comes a little after the check, and InfluxDB's clock may be ahead. A step whose write InfluxDB
 * refuses all the same is processed again, and the check then refuses the reading.
 */
const RETENTION_MARGIN_MS = 60_000;

/** What a step's processing is told of the step: the leases it runs under. */
export interface StepContext {
  /** Applies state only while these leases are held (checked inside the state script). */
  guard?: StateGuard;
  /** Whether the step's leases are still held, as far as this process knows (before history). */
  isCurrent?: () => boolean;
}

/** Processes the payloads of one step. */
export type ProcessItems = (items: IngestItem[], step?: StepContext) => Promise<ProcessResult>;

export function createIngestProcessor(deps: IngestProcessorDeps): ProcessItems {
  const processor = new IngestProcessor(deps);
  return (items, step) => processor.process(items, step);
}

/** A step's payloads up to their stored state: what history and the acknowledgement are made of. */
interface StoredPart {
  payloads: number;
  ticks: number;
  resolved: Awaited<ReturnType<typeof resolveDevices>>;
  devices: ConvertedDevice[];
  applied: (Status | null)[][];
  outcomes: OutcomeLog;
}

class IngestProcessor {
  private readonly deps: IngestProcessorDeps;
  private readonly clock: () => number;
  private readonly slowStep: ReturnType<typeof sampledWarning>;
  private readonly failureWarning: ReturnType<typeof sampledWarning>;
  private readonly fairness: Pick<ParserFairness, 'slowedAmong'>;

  constructor(deps: IngestProcessorDeps) {
    this.deps = deps;
    this.clock = deps.clock ?? Date.now;
    this.slowStep = sampledWarning(deps.log, 'slow worker step');
    this.failureWarning = sampledWarning(
      deps.log,
      'processing failed on the data of a payload or device; its payloads are kept in the dead-letter stream',
    );
    this.fairness = deps.fairness ?? { slowedAmong: () => NOBODY };
  }

  async process(queued: IngestItem[], step: StepContext = {}): Promise<ProcessResult> {
    const nowMs = this.clock();
    const envs = envsOf(queued);
    // After the step's payloads were read: a change answered before they were accepted is seen.
    await this.deps.catalog.refresh([...envs]);
    const slowed = this.fairness.slowedAmong(envs);
    if (slowed.size === 0) return this.processPart(queued, step, nowMs);
    // Environments over their parser CPU share go last: the others' state is stored before their
    // parsers run. Per-device order holds, as a device belongs to one environment.
    const first = queued.filter((item) => !slowed.has(item.env));
    const last = queued.filter((item) => slowed.has(item.env));
    const done = await this.processPart(first, step, nowMs);
    this.deps.onSlowed?.(last);
    return mergeResults(done, await this.processPart(last, step, nowMs));
  }

  private async processPart(queued: IngestItem[], step: StepContext, nowMs: number): Promise<ProcessResult> {
    const stored = await this.store(queued, step, nowMs);
    const { devices, applied, outcomes } = stored;
    const valueLines = historyLines(devices, applied);
    // A device that only had its timer tick in the step made no contact.
    const contacts: ContactPoint[] = devices
      .filter((d) => d.contactMs > 0)
      .map((d) => ({ env: d.env, device: d.device, timeMs: d.contactMs, offsetNs: 0 }));
    // A step known to be stale writes no history: the partition's new owner processes its payloads
    // again (history points are idempotent, so this only saves the work).
    if (step.isCurrent && !step.isCurrent())
      throw new LeaseLostError('the step was stale before its history write: skipped');
    const late = this.deps.lateWrites?.(devices, nowMs);
    const written = this.deps.history
      .write({ values: [], valueLines, events: [], contacts })
      .then(() => late?.(this.clock()) ?? []);
    // Observed by the worker; this keeps an early failure from counting as unhandled meanwhile.
    written.catch(() => undefined);
    const entries = outcomes.entries();
    const acknowledged = this.keepRecent(stored, entries);
    let staleValues = 0;
    for (const statuses of applied) for (const s of statuses) if (s === null) staleValues += 1;
    const failed = outcomes.failures();
    return {
      payloads: stored.payloads,
      ...(stored.ticks > 0 ? { ticks: stored.ticks } : {}),
      values: valueLines.length,
      staleValues,
      written,
      logCommands: this.deps.ingestLog.commands(entries),
      ...(acknowledged ? { acknowledged } : {}),
      ...(failed.length > 0 ? { failed } : {}),
    };
  }

  /** Runs the phases of a part up to its state, and says where the time went when it was slow. */
  private async store(queued: IngestItem[], step: StepContext, nowMs: number): Promise<StoredPart> {
    const { deps } = this;
    const { payloads: items, ticks } = splitTicks(queued);
    const marks = [performance.now()];
    const outcomes = new OutcomeLog();
    const failures = createFailures(outcomes, this.failureWarning);
    const readings = await preparse(items, {
      catalog: deps.catalog,
      sandbox: deps.sandbox,
      outcomes,
      nowMs,
      oldestMs:
        deps.rawRetentionMs === undefined ? undefined : nowMs - deps.rawRetentionMs + RETENTION_MARGIN_MS,
      failed: failures.payload,
    });
    marks.push(performance.now());
    const resolved = await resolveDevices(readings, {
      catalog: deps.catalog,
      outcomes,
      failed: failures.reading,
      ...(deps.networkDevices ? { network: deps.networkDevices } : {}),
    });
    marks.push(performance.now());
    const parsed = parseReadings(resolved, { sandbox: deps.sandbox, outcomes, failed: failures.reading });
    marks.push(performance.now());
    const converted = await convertReadings(parsed, {
      catalog: deps.catalog,
      report: outcomes,
      defaultAvailabilityMinutes: deps.defaultAvailabilityMinutes,
      nowMs,
      failed: failures.device,
    });
    if (ticks.length > 0) await addTicks(converted, ticks, { catalog: deps.catalog, nowMs });
    marks.push(performance.now());
    const results = await this.applyState(converted, nowMs, step.guard);
    marks.push(performance.now());
    const { devices, applied } = withoutRefused(converted, results, failures);
    if (marks[5]! - marks[0]! >= SLOW_STEP_MS) {
      // State lags by this much: say where the time went (an event-loop stall shows in every phase).
      const ms = (i: number) => Math.round(marks[i + 1]! - marks[i]!);
      this.slowStep({
        payloads: items.length,
        devices: devices.length,
        preparseMs: ms(0),
        resolveMs: ms(1),
        parseMs: ms(2),
        convertMs: ms(3),
        stateMs: ms(4),
      });
    }
    return { payloads: items.length, ticks: ticks.length, resolved, devices, applied, outcomes };
  }

  /**
   * The state step. State stored in a layout this version does not know is nobody's payload's
   * fault: the step fails, so its payloads stay queued and are retried once the layout is known.
   */
  private async applyState(
    converted: ConvertedDevice[],
    nowMs: number,
    guard: StepContext['guard'],
  ): Promise<DeviceApplied[]> {
    try {
      return await this.deps.state.applyReadings(converted, nowMs, guard);
    } catch (err) {
      if (isAppError(err) && err.code === 'STATE_LAYOUT_UNKNOWN') {
        this.deps.log.error(
          { code: err.code, err },
          'device state is stored in a layout this version of Vigil does not know; the step is retried, its payloads stay queued: start this version so that its migrations run, or run the newer version that wrote it',
        );
      }
      throw err;
    }
  }

  /** What keeps the part's recent payloads once the step is acknowledged; nothing to keep: none. */
  private keepRecent(
    stored: StoredPart,
    entries: ReturnType<OutcomeLog['entries']>,
  ): (() => void) | undefined {
    const recent = this.deps.recentPayloads;
    if (!recent || recent.count === 0) return undefined;
    const kept = recentPayloadEntries(recent.keys, recent.count, stored.resolved, stored.devices, entries);
    return kept.size > 0 ? () => recent.writer.add(kept) : undefined;
  }
}

const NOBODY: ReadonlySet<string> = new Set();

function envsOf(items: readonly IngestItem[]): Set<string> {
  const envs = new Set<string>();
  for (const item of items) envs.add(item.env);
  return envs;
}

/** One step's result out of the results of its two parts, processed one after the other. */
function mergeResults(a: ProcessResult, b: ProcessResult): ProcessResult {
  const written =
    a.written && b.written
      ? Promise.all([a.written, b.written]).then(([x, y]) => [...x, ...y])
      : (a.written ?? b.written);
  written?.catch(() => undefined);
  const failed = [...(a.failed ?? []), ...(b.failed ?? [])];
  const ticks = (a.ticks ?? 0) + (b.ticks ?? 0);
  return {
    payloads: a.payloads + b.payloads,
    ...(ticks > 0 ? { ticks } : {}),
    values: a.values + b.values,
    staleValues: a.staleValues + b.staleValues,
    ...(written ? { written } : {}),
    logCommands: [...(a.logCommands ?? []), ...(b.logCommands ?? [])],
    ...(a.acknowledged || b.acknowledged
      ? {
          acknowledged: () => {
            a.acknowledged?.();
            b.acknowledged?.();
          },
        }
      : {}),
    ...(failed.length > 0 ? { failed } : {}),
  };
}

/**
 * The devices the state step applied, with the statuses it gave their values. A device whose data
 * the state script refused fails, and is left out of history and contact as well.
 */
function withoutRefused(
  converted: ConvertedDevice[],
  results: DeviceApplied[],
  failures: Failures,
): { devices: ConvertedDevice[]; applied: (Status | null)[][] } {
  if (results.every((r) => Array.isArray(r))) return { devices: converted, applied: results };
  const devices: ConvertedDevice[] = [];
  const applied: (Status | null)[][] = [];
  converted.forEach((device, d) => {
    const result = results[d]!;
    if (Array.isArray(result)) {
      devices.push(device);
      applied.push(result);
    } else failures.device(device.readings, result.refused);
  });
  return { devices, applied };
}

/**
 * The history line of every value, with the status the state step gave it; values it did not apply
 * (older than the stored one) keep their status without hysteresis context.
 */
function historyLines(devices: ConvertedDevice[], applied: (Status | null)[][]): string[] {
  const lines: string[] = [];
  devices.forEach((device, d) => {
    const statuses = applied[d];
    device.values.forEach((v, i) => {
      const status = statuses?.[i] ?? v.status;
      lines.push(valueLineOf(v.linePrefix, v.fieldText, status, v.timeMs, v.offsetNs));
    });
  });
  return lines;
}
