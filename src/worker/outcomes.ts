/**
 * What happened to each queued submission, collected while a job is processed and written to the
 * environment's ingestion log at the end (PRODUCT.md §6): accepted, partial or rejected, with the
 * first problem's code and message.
 */
import type { ErrorCode } from '../errors/catalogue.ts';
import type { IngestLogRecord } from '../ingest/ingest-log.ts';
import type { IngestItem } from '../queue/jobs.ts';

interface Problem {
  code: ErrorCode;
  message: string;
}

interface ItemOutcome {
  item: IngestItem;
  deviceName: string | null;
  acceptedValues: number;
  /** Readings (pre-parser results) that reached a device. */
  readings: number;
  problems: Problem[];
}

export class OutcomeLog {
  // By the item object (one per queued submission in a step): no hashing of its id string.
  private readonly byItem = new Map<IngestItem, ItemOutcome>();

  private of(item: IngestItem): ItemOutcome {
    let o = this.byItem.get(item);
    if (!o) {
      o = { item, deviceName: item.deviceName ?? null, acceptedValues: 0, readings: 0, problems: [] };
      this.byItem.set(item, o);
    }
    return o;
  }

  /** Registers the item so that it appears in the log even if nothing else is said of it. */
  seen(item: IngestItem): void {
    this.of(item);
  }

  device(item: IngestItem, deviceName: string): void {
    const o = this.of(item);
    o.deviceName ??= deviceName;
    o.readings += 1;
  }

  problem(item: IngestItem, code: ErrorCode, message: string, deviceName?: string | null): void {
    const o = this.of(item);
    if (deviceName) o.deviceName ??= deviceName;
    // Keep the log entry small: the first few problems tell the story.
    if (o.problems.length < 5) o.problems.push({ code, message });
  }

  accepted(item: IngestItem, values: number): void {
    this.of(item).acceptedValues += values;
  }

  /** One ingestion-log record per item seen, with its environment. */
  entries(): IngestLogRecord[] {
    return [...this.byItem.values()].map((o) => {
      const first = o.problems[0];
      const outcome = !first
        ? 'accepted'
        : o.acceptedValues > 0 || o.readings > o.problems.length
          ? 'partial'
          : 'rejected';
      const message = first
        ? o.problems.length > 1
          ? `${first.message} (+${o.problems.length - 1} more: ${o.problems
              .slice(1)
              .map((p) => p.code)
              .join(', ')})`
          : first.message
        : null;
      return {
        env: o.item.env,
        receivedMs: o.item.receivedMs,
        ingestId: o.item.id,
        gateway: o.item.gateway,
        deviceName: o.deviceName,
        outcome,
        code: first?.code ?? null,
        message,
      };
    });
  }
}

/**
 * The ingestion-log entries of items moved to the dead-letter stream: rejected, INTERNAL. The
 * reason stays in the server log and `vigil queue dead-letters` (it may name servers); the
 * operator can put them back with `vigil queue requeue`, and they are then logged again.
 */
export function deadLetterOutcomes(items: readonly IngestItem[]): IngestLogRecord[] {
  const log = new OutcomeLog();
  for (const item of items) {
    log.problem(
      item,
      'INTERNAL',
      'Processing failed repeatedly; the payload is kept in the dead-letter queue for an operator to retry.',
    );
  }
  return log.entries();
}
