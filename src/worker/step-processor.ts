/**
 * Processing the entries a step took: their payloads up to their state, under the step's fence;
 * then the rest of the step — history, then the acknowledgement with the ingestion log and dead
 * letters, in that order, so nothing is acknowledged before it is durable — either in the background
 * while the loop goes on, or at once (isolated entries, suspects).
 */
import { LeaseLostError } from '../errors/lease-lost.ts';
import { messageOf } from '../lib/message-of.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence, PartitionLeases } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { FailedSteps } from './failed-steps.ts';
import type { ProcessItems } from './ingest-processor.ts';
import { finishCommands } from './payload-dead-letters.ts';
import type { StepPolicy } from './step-policy.ts';
import type { StepQueue } from './step-queue.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

export interface StepProcessorDeps {
  keys: QueueKeys;
  queue: Pick<StepQueue, 'finish'>;
  leases: Pick<PartitionLeases, 'holds'>;
  process: ProcessItems;
  policy: StepPolicy;
  failures: FailedSteps;
  metrics: Pick<WorkerMetrics, 'duration' | 'steps' | 'payloads' | 'values' | 'ticks' | 'payloadFailures'>;
}

/** The rest of a processed step: history, then the acknowledgement. */
export type FinishStep = () => Promise<void>;

export class StepProcessor {
  private readonly deps: StepProcessorDeps;

  constructor(deps: StepProcessorDeps) {
    this.deps = deps;
  }

  /**
   * Processes entries up to their state; answers the rest of the step (history, then the
   * acknowledgement with the ingestion log and dead letters), for the caller to run.
   */
  async process(entries: QueueEntry[], fence: Fence, isolated: boolean): Promise<FinishStep> {
    const { keys, leases, metrics } = this.deps;
    const items = entries.flatMap((e) => e.items);
    const end = metrics.duration.startTimer();
    const result = await this.deps.process(items, { guard: fence, isCurrent: () => leases.holds(fence) });
    // What the acknowledgement needs, without the payloads: they would stay alive (and be copied
    // by V8's young-generation collections) for as long as the step's history takes.
    const refs = entries.map(({ partition, id, payloadsByEnv }) => ({ partition, id, payloadsByEnv }));
    const commands = finishCommands(keys, entries, result.logCommands, result.failed);
    return async () => {
      // With what the step wrote late, made once its history is written (late-writes.ts).
      const late = (await result.written) ?? [];
      await this.deps.queue.finish(fence, refs, late.length > 0 ? [...commands, ...late] : commands);
      result.acknowledged?.();
      end();
      metrics.steps.inc({ result: 'completed' });
      metrics.payloads.inc(result.payloads);
      metrics.values.inc(result.values);
      if (result.ticks) metrics.ticks.inc(result.ticks);
      if (result.failed) metrics.payloadFailures.inc(result.failed.length);
      this.deps.policy.succeeded(refs, isolated);
    };
  }

  /** Entries as one step, finished before the loop goes on; each given up after its attempts. */
  async processNow(entries: QueueEntry[], fence: Fence, alone: boolean): Promise<void> {
    const { policy, failures } = this.deps;
    try {
      await (
        await this.process(entries, fence, policy.isIsolated(entries[0]!.partition))
      )();
    } catch (err) {
      await failures.failed(entries, fence, err, alone);
      if (err instanceof LeaseLostError) return;
      for (const entry of entries) {
        if (policy.exhausted(entry.id)) await failures.deadLetter(entry, fence, messageOf(err));
      }
    }
  }
}
