/**
 * The dead letters of a step's failed payloads (ProcessResult.failed): one dead-letter entry per
 * queue entry and reason, written by the script that acknowledges the step, so a failed payload
 * leaves its partition exactly when the rest of its entry is done.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import { deadLetterCommand } from '../queue/fenced-step.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { FailedPayload } from './outcomes.ts';

interface PayloadDeadLetter {
  entry: Pick<QueueEntry, 'partition' | 'id'>;
  reason: string;
  items: IngestItem[];
}

/**
 * What the acknowledgement of a step runs: the ingestion log's commands, then the dead letters of
 * `failed`. Built when the step's state is done, so only the failed payloads are kept, not the
 * entries.
 */
export function finishCommands(
  keys: QueueKeys,
  entries: readonly QueueEntry[],
  logCommands: readonly RedisCommand[] | undefined,
  failed: readonly FailedPayload[] | undefined,
): RedisCommand[] {
  const commands = [...(logCommands ?? [])];
  if (failed && failed.length > 0) {
    for (const l of deadLettersOf(entries, failed))
      commands.push(deadLetterCommand(keys, l.entry, l.items, l.reason));
  }
  return commands;
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
