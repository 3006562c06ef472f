/**
 * The dead letters of a step's failed payloads (ProcessResult.failed): one dead-letter entry per
 * queue entry and reason, added to the MULTI that acknowledges the step, so a failed payload leaves
 * its partition exactly when the rest of its entry is done.
 */
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { ChainableCommander } from 'ioredis';
import { addDeadLetter, type QueueEntry } from '../queue/ingest-queue.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import type { FailedPayload } from './outcomes.ts';

interface PayloadDeadLetter {
  entry: Pick<QueueEntry, 'partition' | 'id'>;
  reason: string;
  items: IngestItem[];
}

/**
 * What the acknowledgement adds to its MULTI: `acknowledgeWith` (the ingestion log), then the dead
 * letters of `failed`. Keeps only the failed payloads, not the entries.
 */
export function acknowledgementWith(
  keys: QueueKeys,
  entries: readonly QueueEntry[],
  acknowledgeWith: ((multi: ChainableCommander) => void) | undefined,
  failed: readonly FailedPayload[] | undefined,
): ((multi: ChainableCommander) => void) | undefined {
  if (!failed || failed.length === 0) return acknowledgeWith;
  const letters = deadLettersOf(entries, failed);
  return (multi) => {
    acknowledgeWith?.(multi);
    for (const l of letters) addDeadLetter(multi, keys, l.entry, l.items, l.reason);
  };
}

function deadLettersOf(
  entries: readonly QueueEntry[],
  failed: readonly FailedPayload[],
): PayloadDeadLetter[] {
  const entryOf = new Map<IngestItem, QueueEntry>();
  for (const e of entries) for (const item of e.items) entryOf.set(item, e);
  const letters = new Map<string, PayloadDeadLetter>();
  for (const { item, reason } of failed) {
    const entry = entryOf.get(item);
    if (!entry) throw new Error('a failed payload belongs to no queue entry of its step');
    const key = `${entry.partition}\n${entry.id}\n${reason}`;
    const letter = letters.get(key);
    if (letter) letter.items.push(item);
    else letters.set(key, { entry: { partition: entry.partition, id: entry.id }, reason, items: [item] });
  }
  return [...letters.values()];
}
