/**
 * Suspects: entries taken before by steps that never finished (their worker died, or stalled past
 * its lease). They run with nothing else in flight in this process (crash-gate.ts), so a crash is
 * charged to them alone: a group of them — take-entries.lua halves a group each time it crashes
 * again — or one alone, dead-lettered once it has crashed its worker more than
 * VIGIL_POISON_DELIVERIES times on its own.
 */
import type { Config } from '../config/schema.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence } from '../queue/partition-leases.ts';
import type { Takes } from '../queue/fenced-step.ts';
import type { CrashGate } from './crash-gate.ts';
import type { FailedSteps } from './failed-steps.ts';
import type { StepPolicy } from './step-policy.ts';
import type { StepProcessor } from './step-processor.ts';
import type { StepQueue } from './step-queue.ts';

export interface SuspectsDeps {
  config: Pick<Config, 'poisonDeliveries'>;
  queue: Pick<StepQueue, 'take'>;
  /** Shared by the process's loops. */
  gate: Pick<CrashGate, 'alone'>;
  fenceOf: (entries: readonly Pick<QueueEntry, 'partition'>[]) => Fence | undefined;
  policy: StepPolicy;
  failures: FailedSteps;
  processor: Pick<StepProcessor, 'processNow'>;
}

export class Suspects {
  private readonly deps: SuspectsDeps;

  constructor(deps: SuspectsDeps) {
    this.deps = deps;
  }

  /** Runs the suspects among `entries` (read together, holding a suspect), alone in this process. */
  async run(entries: QueueEntry[]): Promise<void> {
    const leave = await this.deps.gate.alone();
    try {
      const fence = this.deps.fenceOf(entries);
      if (!fence) {
        for (const e of entries) this.deps.policy.recover(e.partition);
        return;
      }
      const taken = await this.take(entries, fence);
      if (taken && taken.group.length > 0) await this.runGroup(taken.group, taken.alone, fence);
    } finally {
      leave();
    }
  }

  /**
   * Takes the group of suspects take-entries.lua picks; the entries it leaves are read again from
   * their pending entries. Answers the group and, for a group of one, the crashes it caused on its
   * own; undefined when taking failed.
   */
  private async take(
    entries: QueueEntry[],
    fence: Fence,
  ): Promise<{ group: QueueEntry[]; alone: number } | undefined> {
    let takes: Takes;
    try {
      takes = await this.deps.queue.take(fence, entries, 'suspects');
    } catch (err) {
      this.deps.failures.takeFailed(entries, err);
      return undefined;
    }
    const group = entries.filter((_, i) => (takes.counts[i] ?? 0) > 0);
    for (const e of entries) if (!group.includes(e)) this.deps.policy.recover(e.partition);
    return { group, alone: takes.alone };
  }

  private async runGroup(group: QueueEntry[], crashesAlone: number, fence: Fence): Promise<void> {
    const [only] = group;
    if (group.length === 1 && only && crashesAlone > this.deps.config.poisonDeliveries) {
      const crashes = crashesAlone - 1;
      await this.deps.failures.deadLetter(
        only,
        fence,
        `crashed its worker ${crashes} times on its own (the worker died, or stalled past its lease, while processing it)`,
      );
      return;
    }
    await this.deps.processor.processNow(group, fence, group.length === 1);
  }
}
