/**
 * Fakes of the ports a step loop's parts are given: an ingest queue in memory that keeps the
 * fenced scripts' rules (take-entries.lua's crash counts, refusal under a lost lease), leases whose
 * hand-backs are recorded, and a processing whose history write the test finishes.
 */
import { pino } from 'pino';
import { Registry, type Counter } from 'prom-client';
import type { IngestItem } from '../../../src/domain/ingest-item.ts';
import { LeaseLostError } from '../../../src/errors/lease-lost.ts';
import type { EntryRef, Takes } from '../../../src/queue/fenced-step.ts';
import { countByEnv, type QueueEntry } from '../../../src/queue/ingest-queue.ts';
import type { Fence, PartitionLeases } from '../../../src/queue/partition-leases.ts';
import { queueKeys } from '../../../src/queue/queue-keys.ts';
import type { RedisCommand } from '../../../src/redis/command.ts';
import { createCrashGate } from '../../../src/worker/crash-gate.ts';
import { FailedSteps } from '../../../src/worker/failed-steps.ts';
import { FinishingSteps } from '../../../src/worker/finishing-steps.ts';
import type { ProcessItems, ProcessResult } from '../../../src/worker/ingest-processor.ts';
import { LoopPartitions, type AssignedPartitions } from '../../../src/worker/partition-assignment.ts';
import { StepRunner } from '../../../src/worker/run-step.ts';
import { createStepPolicy } from '../../../src/worker/step-policy.ts';
import { StepProcessor } from '../../../src/worker/step-processor.ts';
import type { EntryPlace, StepQueue } from '../../../src/worker/step-queue.ts';
import { Suspects } from '../../../src/worker/suspects.ts';
import { createWorkerMetrics } from '../../../src/worker/worker-metrics.ts';

export const silentLog = pino({ level: 'silent' });
export const keys = queueKeys('t');

export function testMetrics() {
  return createWorkerMetrics(new Registry());
}

/** The value of a counter (of the series with `labels`, when given). */
export async function countOf(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  const series = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return series?.value ?? 0;
}

export function item(id: string, env = 'acme'): IngestItem {
  return {
    id,
    env,
    gateway: 'submit',
    via: 'http',
    receivedMs: 0,
    body: '{}',
    bodyIsHex: false,
    client: 'test',
  };
}

/** A queue entry of `payloads` items, with ids `<id>/<n>`. */
export function entry(partition: number, id: string, payloads = 1): QueueEntry {
  const items = Array.from({ length: payloads }, (_, n) => item(`${id}/${n}`));
  return { partition, id, items, payloadsByEnv: countByEnv(items) };
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Tracks whether a promise has settled, for asserting that something still waits. */
export function watch(promise: Promise<unknown>): { settled: boolean } {
  const state = { settled: false };
  void promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

/** Lets every callback that is ready run (promise continuations included), without timers. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 100; i++) await Promise.resolve();
}

/** The value of lease `partition` in `tenure` (the fake's `<token>:<fence>`). */
export const leaseValue = (partition: number, tenure = 1) => `w:${partition}.${tenure}`;

/** The fence of `partitions` in tenure 1. */
export const fenceOf = (...partitions: number[]): Fence => ({
  leaseKeys: partitions.map((p) => keys.partitionLease(p)),
  values: partitions.map((p) => leaseValue(p)),
});

/**
 * The ingest queue in memory. Entries wait in `waiting` until a read delivers them, then stay
 * `pending` until finished. Fenced calls are refused (LeaseLostError) once a value of their fence
 * is in `lost`. Takes follow take-entries.lua: counts per entry, suspects halved per crash.
 */
export class FakeQueue implements StepQueue {
  readonly waiting = new Map<number, QueueEntry[]>();
  readonly pending = new Map<number, QueueEntry[]>();
  /** Entry id → steps that took it and never finished; `<id>:a` → crashes it caused alone. */
  readonly taken = new Map<string, number>();
  readonly finished: { ids: string[]; commands: readonly RedisCommand[] }[] = [];
  readonly lost = new Set<string>();
  /** What the queue was asked, in order (`readNew 0,1`, `take batch e1`, `finish e1`…). */
  readonly calls: string[] = [];
  private wakeReaders: (() => void)[] = [];

  add(...entries: QueueEntry[]): void {
    for (const e of entries) listOf(this.waiting, e.partition).push(e);
    for (const wake of this.wakeReaders.splice(0)) wake();
  }

  /** Entries of `partition` read and not finished, by id. */
  pendingIds(partition: number): string[] {
    return (this.pending.get(partition) ?? []).map((e) => e.id);
  }

  readPending(partitions: readonly number[], count: number): Promise<QueueEntry[]> {
    this.calls.push(`readPending ${partitions.join(',')} ${count}`);
    return Promise.resolve(partitions.flatMap((p) => (this.pending.get(p) ?? []).slice(0, count)));
  }

  readNew(
    fence: Fence,
    partitions: readonly number[],
    count: number,
  ): Promise<{ entries: QueueEntry[] } | { lastIds: string[] }> {
    this.calls.push(`readNew ${partitions.join(',')} ${count}`);
    this.check(fence);
    const entries = partitions.flatMap((p) => {
      const got = (this.waiting.get(p) ?? []).splice(0, count);
      listOf(this.pending, p).push(...got);
      return got;
    });
    return Promise.resolve(entries.length > 0 ? { entries } : { lastIds: partitions.map(() => '0-0') });
  }

  waitForEntries(partitions: readonly number[], _lastIds: readonly string[], blockMs: number): Promise<void> {
    this.calls.push(`waitForEntries ${partitions.join(',')} ${blockMs}`);
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, blockMs);
      this.wakeReaders.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  ensureGroups(): Promise<void> {
    this.calls.push('ensureGroups');
    return Promise.resolve();
  }

  take(fence: Fence, entries: readonly EntryPlace[], mode: 'batch' | 'suspects'): Promise<Takes> {
    this.calls.push(`take ${mode} ${entries.map((e) => e.id).join(',')}`);
    this.check(fence);
    const stored = entries.map((e) => this.taken.get(e.id) ?? 0);
    const first = stored.findIndex((n) => n >= 1);
    const counts = entries.map(() => 0);
    if (mode === 'batch') {
      if (first >= 0) counts[first] = -2;
      else entries.forEach((e, i) => (counts[i] = this.change(e.id, 1)));
      return Promise.resolve({ counts, alone: 0 });
    }
    if (first < 0) return Promise.resolve({ counts, alone: 0 });
    const level = stored[first]!;
    const group = entries.map((_, i) => i).filter((i) => i >= first && stored[i] === level);
    const size = level > 1 ? Math.ceil(group.length / 2) : group.length;
    let alone = 0;
    for (const i of group.slice(0, size)) {
      counts[i] = this.change(entries[i]!.id, 1);
      if (size === 1) alone = this.change(`${entries[i]!.id}:a`, 1);
    }
    return Promise.resolve({ counts, alone });
  }

  release(fence: Fence, entries: readonly EntryPlace[], alone: boolean): Promise<void> {
    this.calls.push(`release ${entries.map((e) => e.id).join(',')}`);
    this.check(fence);
    for (const e of entries) {
      this.change(e.id, -1);
      if (alone) this.change(`${e.id}:a`, -1);
    }
    return Promise.resolve();
  }

  finish(fence: Fence, entries: readonly EntryRef[], commands: readonly RedisCommand[]): Promise<void> {
    this.calls.push(`finish ${entries.map((e) => e.id).join(',')}`);
    this.check(fence);
    for (const e of entries) {
      const list = this.pending.get(e.partition) ?? [];
      this.pending.set(
        e.partition,
        list.filter((p) => p.id !== e.id),
      );
      this.taken.delete(e.id);
      this.taken.delete(`${e.id}:a`);
    }
    this.finished.push({ ids: entries.map((e) => e.id), commands });
    return Promise.resolve();
  }

  private check(fence: Fence): void {
    if (fence.values.some((v) => this.lost.has(v))) throw new LeaseLostError();
  }

  private change(field: string, by: number): number {
    const n = (this.taken.get(field) ?? 0) + by;
    if (n <= 0) this.taken.delete(field);
    else this.taken.set(field, n);
    return n;
  }
}

function listOf<T>(map: Map<number, T[]>, key: number): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

/**
 * A worker's leases as one loop sees them: `held` partitions with their lease values, those
 * `releasing` above the worker's share, and every list a hand-back was offered.
 */
export class FakeLeases implements Pick<
  PartitionLeases,
  'releasing' | 'releasePending' | 'changed' | 'holds'
> {
  readonly held = new Map<number, string>();
  readonly toRelease = new Set<number>();
  readonly offered: number[][] = [];
  /** Told the value of each lease handed back (its key is deleted in Redis: fenced calls fail). */
  onRelease: (value: string) => void = () => undefined;
  private seen = new Map<number, string>();

  constructor(...partitions: number[]) {
    for (const p of partitions) this.held.set(p, leaseValue(p));
  }

  /** The loop's partitions: what is held, and what is new since the last look. */
  assigned(): AssignedPartitions {
    const added = [...this.held].filter(([p, v]) => this.seen.get(p) !== v).map(([p]) => p);
    this.seen = new Map(this.held);
    return { owned: new Map(this.held), added };
  }

  releasing(): ReadonlySet<number> {
    return this.toRelease;
  }

  releasePending(among: readonly number[]): Promise<number[]> {
    this.offered.push([...among]);
    const list = among.filter((p) => this.toRelease.has(p));
    for (const p of list) {
      this.onRelease(this.held.get(p)!);
      this.toRelease.delete(p);
      this.held.delete(p);
    }
    return Promise.resolve(list);
  }

  changed(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  holds(fence: Fence): boolean {
    const values = new Set(this.held.values());
    return fence.values.every((v) => values.has(v));
  }
}

/**
 * A processing whose steps the test finishes: each call records its items and answers a result
 * whose history write waits for `histories[n].resolve()`.
 */
export class FakeProcessing {
  readonly steps: IngestItem[][] = [];
  /** When each step began, by the (fake) clock. */
  readonly startedMs: number[] = [];
  readonly histories: Deferred<RedisCommand[]>[] = [];
  /** Set to make the next calls fail as an infrastructure fault would. */
  failWith: Error | undefined = undefined;

  readonly process: ProcessItems = (items) => {
    this.steps.push(items);
    this.startedMs.push(Date.now());
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    const history = deferred<RedisCommand[]>();
    this.histories.push(history);
    const result: ProcessResult = {
      payloads: items.length,
      values: items.length,
      staleValues: 0,
      written: history.promise,
      logCommands: items.map((i) => ['LPUSH', 'ingest-log', i.id]),
    };
    return Promise.resolve(result);
  };

  /** Lets the history write of step `n` (0-based) complete. */
  writeHistory(n: number): void {
    this.histories[n]!.resolve([]);
  }
}

/** VIGIL_POISON_DELIVERIES of the parts built by `stepParts`. */
export const POISON_DELIVERIES = 5;

/**
 * The parts of one step loop, wired as the loop wires them, over the fakes: a loop owning
 * `owned` (tenure 1, already looked at).
 */
export function stepParts(...owned: number[]) {
  const queue = new FakeQueue();
  const leases = new FakeLeases(...owned);
  const metrics = testMetrics();
  const gate = createCrashGate();
  const processing = new FakeProcessing();
  const finishing = new FinishingSteps(8);
  const policy = createStepPolicy({ backoffMs: 50, backoffMaxMs: 1000, isolateAfter: 3, maxAttempts: 5 });
  const partitions = new LoopPartitions({
    assigned: () => leases.assigned(),
    leases,
    keys,
    isFinishing: (p) => finishing.has(p),
    metrics,
    log: silentLog,
  });
  partitions.look();
  const fenceOf = partitions.fenceOf.bind(partitions);
  const failures = new FailedSteps({
    keys,
    queue,
    policy,
    metrics,
    log: silentLog,
    deadLetterLog: (items, reason) => items.map((i) => ['LPUSH', 'ingest-log', i.id, reason]),
  });
  const processor = new StepProcessor({
    keys,
    queue,
    leases,
    process: processing.process,
    policy,
    failures,
    metrics,
  });
  const suspects = new Suspects({
    config: { poisonDeliveries: POISON_DELIVERIES },
    queue,
    gate,
    fenceOf,
    policy,
    failures,
    processor,
  });
  const runner = new StepRunner({ queue, gate, fenceOf, policy, processor, failures, suspects, finishing });
  return { queue, leases, metrics, gate, processing, finishing, policy, partitions, suspects, runner };
}

/** Puts `entries` in the queue as a crashed step left them: read, taken `takes` times, never finished. */
export function crashed(queue: FakeQueue, takes: number, ...entries: QueueEntry[]): QueueEntry[] {
  for (const e of entries) {
    listOf(queue.pending, e.partition).push(e);
    queue.taken.set(e.id, takes);
  }
  return entries;
}

/** Puts `entries` in the queue as read by this loop, not yet taken. */
export function delivered(queue: FakeQueue, ...entries: QueueEntry[]): QueueEntry[] {
  for (const e of entries) listOf(queue.pending, e.partition).push(e);
  return entries;
}
