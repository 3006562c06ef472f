/**
 * One step loop of a worker: it owns some of the worker's partitions and, over and over, reads
 * what is waiting in them (the pending entries of a partition first, when it is new to the loop or
 * after a fault), takes the entries under the partitions' leases, processes them as one step, and
 * finishes the step — the acknowledgement with its ingestion log and dead letters — while it
 * already reads the next one. Order: a partition is read by one step at a time, in queue order, so
 * each device's payloads reach the state step in acceptance order.
 *
 * Fencing: every effect of a step is refused in Redis once a lease it read under has changed hands
 * (partition-leases.ts); such a step is dropped with one log line and counted, its entries left
 * to the partition's new owner. Crashes: an entry taken by steps that never finished (their worker
 * died or lost its lease) is retried alone, and dead-lettered after VIGIL_POISON_DELIVERIES such
 * takes. Failures this worker sees follow the step policy (step-policy.ts).
 */
import type { Config } from '../config/schema.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import { messageOf } from '../lib/message-of.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import {
  deadLetterCommand,
  finishStep,
  releaseEntries,
  SUSPECT,
  takeEntries,
  type Takes,
} from '../queue/fenced-step.ts';
import {
  ensureGroups,
  readNew,
  readPending as readPendingEntries,
  waitForEntries,
  type QueueEntry,
} from '../queue/ingest-queue.ts';
import type { Fence, PartitionLeases } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { RedisCommand } from '../redis/command.ts';
import { replyCode } from '../redis/reply-code.ts';
import type { Redis } from '../redis/connect.ts';
import type { CrashGate } from './crash-gate.ts';
import type { ProcessItems } from './ingest-processor.ts';
import { finishCommands } from './payload-dead-letters.ts';
import { createStepPolicy } from './step-policy.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

/** Consecutive failed steps after which a partition is retried one entry at a time. */
const ISOLATE_AFTER = 3;
/**
 * Steps of one loop whose history is still being written while the loop processes the next. A
 * slow InfluxDB write then holds up history only, not state. Memory stays bounded: at most this many
 * steps of VIGIL_WORKER_BATCH_MAX_PAYLOADS per loop.
 */
const MAX_FINISHING = 8;
/** Longest a read waits for new entries before the step loop looks at its partitions again. */
const BLOCK_MS = 250;

export interface StepLoopDeps {
  config: Pick<
    Config,
    | 'queuePartitions'
    | 'batchMaxPayloads'
    | 'workerBatchMaxPayloads'
    | 'workerStepIntervalMs'
    | 'jobAttempts'
    | 'jobBackoffMs'
    | 'jobBackoffMaxMs'
    | 'poisonDeliveries'
  >;
  keys: QueueKeys;
  /** This loop's connection for (blocking) reads. */
  reader: Redis;
  /** The worker's command connection: takes and acknowledgements. */
  control: Redis;
  leases: PartitionLeases;
  /**
   * The partitions this loop owns now, each with the value of its lease (the tenure its steps run
   * under), and those new to it since the last call (a partition taken again is new again).
   */
  partitions(): { owned: ReadonlyMap<number, string>; added: number[] };
  /** Reconnections of the worker's connections so far. */
  reconnections(): number;
  process: ProcessItems;
  /** Shared by the process's loops: a suspect's step runs with nothing else in flight. */
  gate: CrashGate;
  /** The ingestion-log commands of items that are dead-lettered. */
  deadLetterLog(items: IngestItem[], reason: string): RedisCommand[];
  metrics: WorkerMetrics;
  log: Logger;
  isClosing(): boolean;
  /** A sleep that the worker's close ends early. */
  pause(ms: number): Promise<void>;
}

export async function runStepLoop(deps: StepLoopDeps): Promise<void> {
  const { config, keys, leases, metrics, log } = deps;
  const policy = createStepPolicy({
    backoffMs: config.jobBackoffMs,
    backoffMaxMs: config.jobBackoffMaxMs,
    isolateAfter: ISOLATE_AFTER,
    maxAttempts: config.jobAttempts,
  });
  const staleWarning = sampledWarning(
    log,
    "processing step refused: its partition lease changed hands (this worker stalled); the partition's new owner processes its payloads",
  );
  // Payloads per entry, assumed the largest possible until measured (a step stays within its cap).
  let averageEntry = config.batchMaxPayloads;
  let lastStepMs = 0;
  /** The last read filled a partition's count: a backlog, which no wait would make steps larger. */
  let backlog = false;
  let reconnectionsSeen = deps.reconnections();
  // Steps whose history is still being written: at most MAX_FINISHING beside the one in process.
  const finishing = new Set<Promise<void>>();
  /** Partition → its steps still finishing: a partition is handed back only once it has none. */
  const busy = new Map<number, number>();

  /**
   * The partitions this loop owned when it last looked, with their lease values: a step runs under
   * the tenure it was read in, never under a later one of the same partition.
   */
  let owned: ReadonlyMap<number, string> = new Map();
  while (!deps.isClosing()) {
    await settleFinishing();
    const assigned = deps.partitions();
    owned = assigned.owned;
    const { added } = assigned;
    await handBack();
    // A partition new to this loop may hold entries its previous owner read: those go first.
    for (const p of added) policy.recover(p);
    if (reconnectionsSeen !== deps.reconnections()) {
      // Across a reconnection a read's reply or an acknowledgement can be lost: read what is pending.
      reconnectionsSeen = deps.reconnections();
      for (const p of owned.keys()) policy.recover(p);
      continue;
    }
    // A partition to hand back starts no new step: its finishing ones end, then it goes.
    const releasing = leases.releasing();
    const steppable = [...owned.keys()].filter((p) => !releasing.has(p));
    const ready = policy.ready(steppable);
    if (ready.length === 0) {
      const finished = finishing.size > 0 ? [Promise.race(finishing)] : [];
      await Promise.race([leases.changed(1000), deps.pause(policy.waitMs(steppable)), ...finished]);
      continue;
    }
    const entries = await read(ready);
    if (entries.length > 0) await runStep(entries);
  }
  await Promise.allSettled([...finishing]);

  /** Hands back the partitions above this worker's share that have no step in flight. */
  async function handBack(): Promise<void> {
    const idle = [...owned.keys()].filter((p) => !busy.has(p));
    try {
      const released = await leases.releasePending(idle);
      if (released.length > 0) metrics.handedBack.inc(released.length);
    } catch (err) {
      log.warn({ err }, 'handing partitions back failed; retried at the next step');
    }
  }

  /** Waits while too many steps are finishing, or while a pending read could see a live step's entries. */
  async function settleFinishing(): Promise<void> {
    while (finishing.size > 0 && (finishing.size >= MAX_FINISHING || hasRecovering())) {
      await Promise.race(finishing);
    }
  }

  function hasRecovering(): boolean {
    for (const p of owned.keys()) if (policy.isRecovering(p)) return true;
    return false;
  }

  /** The entries of the next step: pending ones of recovering partitions, else new ones. */
  async function read(ready: number[]): Promise<QueueEntry[]> {
    const perPartition = Math.max(
      1,
      Math.floor(config.workerBatchMaxPayloads / (averageEntry * ready.length)),
    );
    try {
      const pending = ready.filter((p) => policy.isRecovering(p));
      if (pending.length > 0) return await readPending(pending, perPartition);
      // Steady load: let payloads gather so that one step's fixed costs serve many of them.
      const wait = backlog ? 0 : lastStepMs + config.workerStepIntervalMs - Date.now();
      if (wait > 0) await deps.pause(wait);
      const fence = fenceOf(ready.map((partition) => ({ partition })));
      if (!fence) return [];
      const got = await readNew(deps.reader, keys, fence, ready, perPartition);
      if ('lastIds' in got) {
        await waitForEntries(deps.reader, keys, ready, got.lastIds, BLOCK_MS);
        return [];
      }
      backlog = fillsAPartition(got.entries, perPartition);
      return got.entries;
    } catch (err) {
      // A lease lost since the loop looked: the next look drops the partition.
      if (err instanceof LeaseLostError) return [];
      if (replyCode(err) === 'NOGROUP') {
        await ensureGroups(deps.control, keys, config.queuePartitions).catch((e: unknown) => {
          log.warn({ err: e }, 'creating the ingest queue groups failed; retrying');
        });
      }
      log.warn({ err }, 'reading the ingest queue failed; retrying');
      for (const p of ready) policy.recover(p);
      await deps.pause(config.jobBackoffMs);
      return [];
    }
  }

  /** What was read before and not acknowledged, in queue order; isolated partitions one entry each. */
  async function readPending(pending: number[], perPartition: number): Promise<QueueEntry[]> {
    const isolated = pending.filter((p) => policy.isIsolated(p));
    const batched = pending.filter((p) => !policy.isIsolated(p));
    const entries = [
      ...(await readPendingEntries(deps.reader, keys, batched, perPartition)),
      ...(await readPendingEntries(deps.reader, keys, isolated, 1)),
    ];
    const seen = new Set(entries.map((e) => e.partition));
    for (const p of pending) if (!seen.has(p)) policy.recovered(p);
    return entries;
  }

  /** Takes the entries under their leases, then processes them: together, or one by one. */
  async function runStep(entries: QueueEntry[]): Promise<void> {
    lastStepMs = Date.now();
    const itemCount = entries.reduce((n, e) => n + e.items.length, 0);
    averageEntry = averageEntry * 0.8 + (itemCount / entries.length) * 0.2;
    const fence = fenceOf(entries);
    // A lease lost since the read: leave the entries pending (read again if it comes back).
    if (!fence) {
      for (const e of entries) policy.recover(e.partition);
      return;
    }
    const leave = await deps.gate.shared();
    const taken = await take(fence, entries, 'batch');
    if (taken === SUSPECT) {
      leave();
      await runSuspects(entries);
      return;
    }
    const inFlight: Promise<void>[] = [];
    try {
      const alone = taken.filter((e) => policy.isIsolated(e.partition));
      const together = taken.filter((e) => !alone.includes(e));
      if (together.length > 0) {
        try {
          inFlight.push(track(together, fence, await processEntries(together, fence, false)));
        } catch (err) {
          await stepFailed(together, fence, err, false);
        }
      }
      for (const entry of alone) {
        const own = fenceOf([entry]);
        if (own) await processNow([entry], own, false);
        else policy.recover(entry.partition);
      }
    } finally {
      // The shared place is held until the step's history and acknowledgement are done too.
      void Promise.allSettled(inFlight).then(leave);
    }
  }

  /**
   * Suspects — entries of steps that never finished — with nothing else in flight in this process:
   * a group of them (take-entries.lua halves a group each time it crashes again), or one alone,
   * dead-lettered once it has crashed its worker VIGIL_POISON_DELIVERIES times on its own.
   */
  async function runSuspects(entries: QueueEntry[]): Promise<void> {
    const leave = await deps.gate.alone();
    try {
      const fence = fenceOf(entries);
      if (!fence) {
        for (const e of entries) policy.recover(e.partition);
        return;
      }
      let takes: Takes;
      try {
        takes = await takeEntries(deps.control, keys, fence, entries, 'suspects');
      } catch (err) {
        takeFailed(entries, err);
        return;
      }
      const group = entries.filter((_, i) => (takes.counts[i] ?? 0) > 0);
      for (const e of entries) if (!group.includes(e)) policy.recover(e.partition);
      const [only] = group;
      if (group.length === 1 && only && takes.alone > config.poisonDeliveries) {
        const crashes = takes.alone - 1;
        await moveToDeadLetters(
          only,
          fence,
          `crashed its worker ${crashes} times on its own (the worker died, or stalled past its lease, while processing it)`,
        );
        return;
      }
      if (group.length > 0) await processNow(group, fence, group.length === 1);
    } finally {
      leave();
    }
  }

  /** The fence of the partitions of `entries` in the tenure the loop read them in. */
  function fenceOf(entries: readonly Pick<QueueEntry, 'partition'>[]): Fence | undefined {
    const partitions = [...new Set(entries.map((e) => e.partition))];
    const values: string[] = [];
    for (const p of partitions) {
      const value = owned.get(p);
      if (value === undefined) return undefined;
      values.push(value);
    }
    return { leaseKeys: partitions.map((p) => keys.partitionLease(p)), values };
  }

  /** Entries as one step, finished before the loop goes on; each given up after its attempts. */
  async function processNow(entries: QueueEntry[], fence: Fence, alone: boolean): Promise<void> {
    try {
      await (
        await processEntries(entries, fence, policy.isIsolated(entries[0]!.partition))
      )();
    } catch (err) {
      await stepFailed(entries, fence, err, alone);
      if (err instanceof LeaseLostError) return;
      for (const entry of entries) {
        if (policy.exhausted(entry.id)) await moveToDeadLetters(entry, fence, messageOf(err));
      }
    }
  }

  /** Records the take of `entries` as a batch: those taken, or SUSPECT when they hold one (none taken). */
  async function take(
    fence: Fence,
    entries: QueueEntry[],
    mode: 'batch',
  ): Promise<QueueEntry[] | typeof SUSPECT> {
    let takes: Takes;
    try {
      takes = await takeEntries(deps.control, keys, fence, entries, mode);
    } catch (err) {
      takeFailed(entries, err);
      return [];
    }
    if (takes.counts.includes(SUSPECT)) return SUSPECT;
    return entries;
  }

  function takeFailed(entries: readonly QueueEntry[], err: unknown): void {
    if (err instanceof LeaseLostError) stale(entries);
    else {
      log.warn({ err }, 'taking queue entries failed; retrying');
      for (const e of entries) policy.recover(e.partition);
    }
  }

  /**
   * Processes entries up to their state; answers the rest of the step (history, then the
   * acknowledgement with the ingestion log and dead letters), which runs while the loop goes on.
   */
  async function processEntries(
    entries: QueueEntry[],
    fence: Fence,
    isolated: boolean,
  ): Promise<() => Promise<void>> {
    const items = entries.flatMap((e) => e.items);
    const end = metrics.duration.startTimer();
    const result = await deps.process(items, { guard: fence, isCurrent: () => leases.holds(fence) });
    // What the acknowledgement needs, without the payloads: they would stay alive (and be copied
    // by V8's young-generation collections) for as long as the step's history takes.
    const refs = entries.map(({ partition, id, payloadsByEnv }) => ({ partition, id, payloadsByEnv }));
    const commands = finishCommands(keys, entries, result.logCommands, result.failed);
    return async () => {
      // With what the step wrote late, made once its history is written (late-writes.ts).
      const late = (await result.written) ?? [];
      await finishStep(deps.control, keys, fence, refs, late.length > 0 ? [...commands, ...late] : commands);
      result.acknowledged?.();
      end();
      metrics.steps.inc({ result: 'completed' });
      metrics.payloads.inc(result.payloads);
      metrics.values.inc(result.values);
      if (result.ticks) metrics.ticks.inc(result.ticks);
      if (result.failed) metrics.payloadFailures.inc(result.failed.length);
      policy.succeeded(refs, isolated);
    };
  }

  /** Lets a step finish in the background, at most MAX_FINISHING at once; answers when it is done. */
  function track(entries: QueueEntry[], fence: Fence, finish: () => Promise<void>): Promise<void> {
    const refs = entries.map(({ partition, id }) => ({ partition, id }));
    const partitions = [...new Set(refs.map((r) => r.partition))];
    for (const p of partitions) busy.set(p, (busy.get(p) ?? 0) + 1);
    const tracked: Promise<void> = finish()
      .catch((err: unknown) => stepFailed(refs, fence, err, false))
      .finally(() => {
        finishing.delete(tracked);
        for (const p of partitions) {
          const n = (busy.get(p) ?? 1) - 1;
          if (n > 0) busy.set(p, n);
          else busy.delete(p);
        }
      });
    finishing.add(tracked);
    return tracked;
  }

  /** A step failed: stale, or retried after a back-off with its takes given back. */
  async function stepFailed(
    entries: readonly Pick<QueueEntry, 'partition' | 'id'>[],
    fence: Fence,
    err: unknown,
    alone: boolean,
  ): Promise<void> {
    if (err instanceof LeaseLostError) {
      stale(entries);
      return;
    }
    policy.failed(entries);
    metrics.steps.inc({ result: 'failed' });
    log.warn(
      {
        partitions: [...new Set(entries.map((e) => e.partition))],
        entries: entries.length,
        err,
      },
      'processing step failed; its entries stay queued and are retried',
    );
    // A failure this worker saw is not a crash: give the takes back (if the leases still hold).
    await releaseEntries(deps.control, keys, fence, entries, alone).catch((e: unknown) => {
      if (!(e instanceof LeaseLostError))
        log.warn({ err: e }, 'giving back the takes of a failed step failed; they count as a crash');
    });
  }

  function stale(entries: readonly Pick<QueueEntry, 'partition'>[]): void {
    metrics.fencedSteps.inc();
    staleWarning({ partitions: [...new Set(entries.map((e) => e.partition))] });
  }

  /** Moves an entry to the dead-letter stream (kept, listed, requeueable), under its lease. */
  async function moveToDeadLetters(entry: QueueEntry, fence: Fence, reason: string): Promise<void> {
    try {
      await finishStep(
        deps.control,
        keys,
        fence,
        [entry],
        [...deps.deadLetterLog(entry.items, reason), deadLetterCommand(keys, entry, entry.items, reason)],
      );
      policy.forget(entry);
      metrics.deadLetters.inc(entry.items.length);
      log.error(
        { partition: entry.partition, entry: entry.id, payloads: entry.items.length, reason },
        'queue entry moved to the dead-letter stream',
      );
    } catch (err) {
      if (err instanceof LeaseLostError) stale([entry]);
      // Else Redis unreachable: the entry stays pending and is tried again.
      else log.warn({ err }, 'dead-lettering failed; the entry stays queued');
    }
  }
}

/** Whether `entries` hold `count` entries of one partition (the read's count per partition). */
function fillsAPartition(entries: readonly QueueEntry[], count: number): boolean {
  const perPartition = new Map<number, number>();
  for (const e of entries) {
    const n = (perPartition.get(e.partition) ?? 0) + 1;
    if (n >= count) return true;
    perPartition.set(e.partition, n);
  }
  return false;
}
