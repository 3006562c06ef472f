/**
 * One step loop of a worker: it owns some of the worker's partitions and, over and over, reads
 * what is waiting in them (the pending entries of a partition first, when it is new to the loop or
 * after a fault), takes the entries under the partitions' leases, processes them as one step, and
 * finishes the step — the acknowledgement with its ingestion log and dead letters — while it
 * already reads the next one. Order: a partition is read by one step at a time, in queue order, so
 * each device's payloads reach the state step in acceptance order.
 *
 * The loop's parts, each given what it needs:
 * - partition-assignment.ts: the partitions it owns, their tenures, and hand-back between steps;
 * - entry-reader.ts: reading the next step's entries, paced by the step interval;
 * - run-step.ts: taking the entries and processing them (step-processor.ts);
 * - finishing-steps.ts: the steps whose history and acknowledgement are still being written;
 * - suspects.ts: entries of steps that never finished, run alone (crash-gate.ts);
 * - failed-steps.ts and step-policy.ts: what becomes of a stale or failed step.
 *
 * Fencing: every effect of a step is refused in Redis once a lease it read under has changed hands
 * (partition-leases.ts); such a step is dropped with one log line and counted, its entries left
 * to the partition's new owner. Crashes: an entry taken by steps that never finished (their worker
 * died or lost its lease) is retried alone, and dead-lettered after VIGIL_POISON_DELIVERIES such
 * takes. Failures this worker sees follow the step policy (step-policy.ts).
 */
import type { Config } from '../config/schema.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import type { Logger } from '../log/logger.ts';
import type { PartitionLeases } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { CrashGate } from './crash-gate.ts';
import { EntryReader } from './entry-reader.ts';
import { FailedSteps } from './failed-steps.ts';
import { FinishingSteps } from './finishing-steps.ts';
import type { ProcessItems } from './ingest-processor.ts';
import { LoopPartitions, type AssignedPartitions } from './partition-assignment.ts';
import { StepRunner } from './run-step.ts';
import { createStepPolicy, type StepPolicy } from './step-policy.ts';
import { StepProcessor } from './step-processor.ts';
import type { StepQueue } from './step-queue.ts';
import { Suspects } from './suspects.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

/** Consecutive failed steps after which a partition is retried one entry at a time. */
const ISOLATE_AFTER = 3;
/**
 * Steps of one loop whose history is still being written while the loop processes the next. A
 * slow InfluxDB write then holds up history only, not state. Memory stays bounded: at most this many
 * steps of VIGIL_WORKER_BATCH_MAX_PAYLOADS per loop.
 */
const MAX_FINISHING = 8;
/** Longest an idle loop waits before it looks at its partitions again, unless a lease changes. */
const IDLE_LOOK_MS = 1000;

export interface StepLoopDeps {
  config: Pick<
    Config,
    | 'batchMaxPayloads'
    | 'workerBatchMaxPayloads'
    | 'workerStepIntervalMs'
    | 'jobAttempts'
    | 'jobBackoffMs'
    | 'jobBackoffMaxMs'
    | 'poisonDeliveries'
  >;
  keys: QueueKeys;
  /** The ingest queue: this loop's reads on its own connection, the rest on the worker's. */
  queue: StepQueue;
  leases: Pick<PartitionLeases, 'releasing' | 'releasePending' | 'changed' | 'holds'>;
  /**
   * The partitions this loop owns now, each with the value of its lease (the tenure its steps run
   * under), and those new to it since the last call (a partition taken again is new again).
   */
  partitions: () => AssignedPartitions;
  /** Reconnections of the worker's connections so far. */
  reconnections(): number;
  process: ProcessItems;
  /** Shared by the process's loops: a suspect's step runs with nothing else in flight. */
  gate: CrashGate;
  /** The ingestion-log commands of items that are dead-lettered. */
  deadLetterLog: (items: IngestItem[], reason: string) => RedisCommand[];
  metrics: WorkerMetrics;
  log: Logger;
  isClosing(): boolean;
  /** A sleep that the worker's close ends early. */
  pause: (ms: number) => Promise<void>;
  /** The clock of back-offs and of the step interval (epoch ms); default Date.now. */
  now?: () => number;
}

/** Runs the loop until the worker closes, then waits for its steps still finishing. */
export async function runStepLoop(deps: StepLoopDeps): Promise<void> {
  await new StepLoop(deps).run();
}

/** What most of the loop's parts are given. */
interface SharedParts {
  queue: StepQueue;
  policy: StepPolicy;
  fenceOf: LoopPartitions['fenceOf'];
}

class StepLoop {
  private readonly deps: StepLoopDeps;
  private readonly policy: StepPolicy;
  private readonly finishing = new FinishingSteps(MAX_FINISHING);
  private readonly partitions: LoopPartitions;
  private readonly reader: EntryReader;
  private readonly runner: StepRunner;
  private reconnectionsSeen: number;

  constructor(deps: StepLoopDeps) {
    this.deps = deps;
    const { config, log, metrics } = deps;
    this.policy = createStepPolicy({
      backoffMs: config.jobBackoffMs,
      backoffMaxMs: config.jobBackoffMaxMs,
      isolateAfter: ISOLATE_AFTER,
      maxAttempts: config.jobAttempts,
      ...(deps.now ? { clock: deps.now } : {}),
    });
    this.partitions = new LoopPartitions({
      assigned: deps.partitions,
      leases: deps.leases,
      keys: deps.keys,
      isFinishing: (p) => this.finishing.has(p),
      metrics,
      log,
    });
    const fenceOf = this.partitions.fenceOf.bind(this.partitions);
    const common: SharedParts = { queue: deps.queue, policy: this.policy, fenceOf };
    this.reader = new EntryReader({
      ...common,
      config,
      log,
      pause: deps.pause,
      ...(deps.now ? { now: deps.now } : {}),
    });
    this.runner = this.createRunner(common);
    this.reconnectionsSeen = deps.reconnections();
  }

  async run(): Promise<void> {
    while (!this.deps.isClosing()) await this.turn();
    await this.finishing.drain();
  }

  /** One look at the partitions, then one step, or a wait for one to be ready. */
  private async turn(): Promise<void> {
    // A pending read could see the entries of a step still finishing: those end first.
    await this.finishing.settle(() => this.hasRecovering());
    const added = this.partitions.look();
    await this.partitions.handBack();
    // A partition new to this loop may hold entries its previous owner read: those go first.
    for (const p of added) this.policy.recover(p);
    if (this.reconnected()) return;
    // A partition to hand back starts no new step: its finishing ones end, then it goes.
    const steppable = this.partitions.steppable();
    const ready = this.policy.ready(steppable);
    if (ready.length === 0) {
      await this.waitUntilReady(steppable);
      return;
    }
    const entries = await this.reader.read(ready);
    if (entries.length === 0) return;
    this.reader.stepStarted(entries);
    await this.runner.run(entries);
  }

  private createRunner(common: SharedParts): StepRunner {
    const { deps } = this;
    const failures = new FailedSteps({
      ...common,
      keys: deps.keys,
      metrics: deps.metrics,
      log: deps.log,
      deadLetterLog: deps.deadLetterLog,
    });
    const processor = new StepProcessor({
      ...common,
      keys: deps.keys,
      leases: deps.leases,
      process: deps.process,
      failures,
      metrics: deps.metrics,
    });
    const suspects = new Suspects({ ...common, config: deps.config, gate: deps.gate, failures, processor });
    return new StepRunner({
      ...common,
      gate: deps.gate,
      processor,
      failures,
      suspects,
      finishing: this.finishing,
    });
  }

  /**
   * After a reconnection of the worker's connections, reads every partition's pending entries first:
   * across it a read's reply or an acknowledgement can be lost. Answers whether there was one.
   */
  private reconnected(): boolean {
    if (this.reconnectionsSeen === this.deps.reconnections()) return false;
    this.reconnectionsSeen = this.deps.reconnections();
    for (const p of this.partitions.partitions()) this.policy.recover(p);
    return true;
  }

  /** Whether a partition reads its pending entries next: none of its steps may be finishing then. */
  private hasRecovering(): boolean {
    return this.partitions.partitions().some((p) => this.policy.isRecovering(p));
  }

  /** Waits for a lease change, the end of the first back-off, or a finishing step, whichever is first. */
  private async waitUntilReady(steppable: readonly number[]): Promise<void> {
    const finished = this.finishing.size > 0 ? [this.finishing.anyEnded()] : [];
    await Promise.race([
      this.deps.leases.changed(IDLE_LOOK_MS),
      this.deps.pause(this.policy.waitMs(steppable)),
      ...finished,
    ]);
  }
}
