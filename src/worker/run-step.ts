/**
 * Running one step of entries read together: it takes them under the leases they were read in
 * (crash counts, take-entries.lua), then processes them — together, or one by one for isolated
 * partitions — holding a shared place in the crash gate until the step's history and
 * acknowledgement are done too. Entries that hold a suspect are taken by nobody here: they go to
 * the suspects' own step (suspects.ts).
 */
import { SUSPECT, type Takes } from '../queue/fenced-step.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence } from '../queue/partition-leases.ts';
import type { CrashGate } from './crash-gate.ts';
import type { FailedSteps } from './failed-steps.ts';
import type { FinishingSteps } from './finishing-steps.ts';
import type { StepPolicy } from './step-policy.ts';
import type { FinishStep, StepProcessor } from './step-processor.ts';
import type { StepQueue } from './step-queue.ts';
import type { Suspects } from './suspects.ts';

export interface StepRunnerDeps {
  queue: Pick<StepQueue, 'take'>;
  /** Shared by the process's loops. */
  gate: Pick<CrashGate, 'shared'>;
  fenceOf: (entries: readonly Pick<QueueEntry, 'partition'>[]) => Fence | undefined;
  policy: StepPolicy;
  processor: Pick<StepProcessor, 'process' | 'processNow'>;
  failures: FailedSteps;
  suspects: Pick<Suspects, 'run'>;
  finishing: Pick<FinishingSteps, 'add'>;
}

export class StepRunner {
  private readonly deps: StepRunnerDeps;

  constructor(deps: StepRunnerDeps) {
    this.deps = deps;
  }

  /** Takes the entries under their leases, then processes them: together, or one by one. */
  async run(entries: QueueEntry[]): Promise<void> {
    const { gate, fenceOf, policy } = this.deps;
    const fence = fenceOf(entries);
    // A lease lost since the read: leave the entries pending (read again if it comes back).
    if (!fence) {
      for (const e of entries) policy.recover(e.partition);
      return;
    }
    const leave = await gate.shared();
    const taken = await this.take(fence, entries);
    if (taken === SUSPECT) {
      leave();
      await this.deps.suspects.run(entries);
      return;
    }
    const inFlight: Promise<void>[] = [];
    try {
      const alone = taken.filter((e) => policy.isIsolated(e.partition));
      const together = taken.filter((e) => !alone.includes(e));
      if (together.length > 0) await this.processTogether(together, fence, inFlight);
      for (const entry of alone) await this.processAlone(entry);
    } finally {
      // The shared place is held until the step's history and acknowledgement are done too.
      void Promise.allSettled(inFlight).then(leave);
    }
  }

  /** Records the take of `entries` as a batch: those taken, or SUSPECT when they hold one (none taken). */
  private async take(fence: Fence, entries: QueueEntry[]): Promise<QueueEntry[] | typeof SUSPECT> {
    let takes: Takes;
    try {
      takes = await this.deps.queue.take(fence, entries, 'batch');
    } catch (err) {
      this.deps.failures.takeFailed(entries, err);
      return [];
    }
    if (takes.counts.includes(SUSPECT)) return SUSPECT;
    return entries;
  }

  /**
   * Processes entries up to their state; their finishing (history, acknowledgement) runs while the
   * loop goes on, and joins `inFlight`.
   */
  private async processTogether(
    entries: QueueEntry[],
    fence: Fence,
    inFlight: Promise<void>[],
  ): Promise<void> {
    let finish: FinishStep;
    try {
      finish = await this.deps.processor.process(entries, fence, false);
    } catch (err) {
      await this.deps.failures.failed(entries, fence, err, false);
      return;
    }
    const refs = entries.map(({ partition, id }) => ({ partition, id }));
    inFlight.push(
      this.deps.finishing.add(
        refs.map((r) => r.partition),
        finish,
        (err) => this.deps.failures.failed(refs, fence, err, false),
      ),
    );
  }

  /** An isolated partition's entry, as a step of its own finished before the next. */
  private async processAlone(entry: QueueEntry): Promise<void> {
    const own = this.deps.fenceOf([entry]);
    if (own) await this.deps.processor.processNow([entry], own, false);
    else this.deps.policy.recover(entry.partition);
  }
}
