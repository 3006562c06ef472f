/**
 * What happened to each queued submission, collected while a job is processed and written to the
 * environment's ingestion log at the end: accepted, partial or rejected, with the first problem's
 * code and message. A submission whose processing failed on its data (PROCESSING_FAILED) is also
 * listed among the failures, for the dead-letter stream.
 */
import type { ErrorCode } from '../errors/catalogue.ts';
import type { IngestLogRecord } from '../ingest/ingest-log.ts';
import type { IngestGateway, IngestItem } from '../domain/ingest-item.ts';
import type { ConversionReport } from './convert.ts';
import type { ParsedReading } from './readings.ts';

/** A submission whose processing failed on its data, with the reason (names no payload content). */
export interface FailedPayload {
  item: IngestItem;
  reason: string;
}

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
  /** Why processing failed on its data (the first reason), or null. */
  failure: string | null;
  /** The version of the definition that parsed it. */
  definitionVersion: number | null;
  /** What a device codec warned of while it decoded the payload (its data was kept). */
  warnings: string[] | null;
}

export class OutcomeLog implements ConversionReport {
  // By the item object (one per queued submission in a step): no hashing of its id string.
  private readonly byItem = new Map<IngestItem, ItemOutcome>();

  private of(item: IngestItem): ItemOutcome {
    let o = this.byItem.get(item);
    if (!o) {
      o = {
        item,
        deviceName: item.deviceName ?? null,
        acceptedValues: 0,
        readings: 0,
        problems: [],
        failure: null,
        definitionVersion: null,
        warnings: null,
      };
      this.byItem.set(item, o);
    }
    return o;
  }

  /** Registers the item so that it appears in the log even if nothing else is said of it. */
  seen(item: IngestItem): void {
    this.of(item);
  }

  /** A reading of the item reached its device, whose definition is at `definitionVersion`. */
  device(item: IngestItem, deviceName: string, definitionVersion: number | null = null): void {
    const o = this.of(item);
    o.deviceName ??= deviceName;
    o.readings += 1;
    o.definitionVersion ??= definitionVersion;
  }

  problem(item: IngestItem, code: ErrorCode, message: string, deviceName?: string | null): void {
    const o = this.of(item);
    if (deviceName) o.deviceName ??= deviceName;
    // Keep the log entry small: the first few problems tell the story.
    if (o.problems.length < 5) o.problems.push({ code, message });
  }

  /** A device codec decoded a reading of the item with warnings (its data is kept). */
  warned(item: IngestItem, warnings: readonly string[]): void {
    const o = this.of(item);
    o.warnings ??= [];
    for (const w of warnings) if (o.warnings.length < 5) o.warnings.push(w);
  }

  accepted(item: IngestItem, values: number): void {
    this.of(item).acceptedValues += values;
  }

  dropped(r: ParsedReading, key: string, reason: string): void {
    this.problem(r.item, 'VALUE_CONVERSION_FAILED', `${key}: ${reason}`, r.deviceName);
  }

  unknownKeys(r: ParsedReading, keys: string[]): void {
    const shown = keys.slice(0, 10).join(', ');
    this.problem(
      r.item,
      'UNKNOWN_DATA_POINT',
      `not data points of ${r.definition.spec.name}: ${shown}`,
      r.deviceName,
    );
  }

  /**
   * Processing failed on the data of this submission or of its device: it is logged as rejected
   * (PROCESSING_FAILED first) and listed by failures(). `reason` goes to the dead-letter stream.
   */
  failed(item: IngestItem, reason: string, deviceName?: string | null): void {
    const o = this.of(item);
    if (deviceName) o.deviceName ??= deviceName;
    if (o.failure !== null) return;
    o.failure = reason;
    o.problems.unshift({
      code: 'PROCESSING_FAILED',
      message:
        'processing failed on this payload; it is kept in the dead-letter queue for an operator to retry',
    });
    if (o.problems.length > 5) o.problems.length = 5;
  }

  /** The submissions whose processing failed on their data, in the order first seen. */
  failures(): FailedPayload[] {
    const out: FailedPayload[] = [];
    for (const o of this.byItem.values())
      if (o.failure !== null) out.push({ item: o.item, reason: o.failure });
    return out;
  }

  /** One ingestion-log record per item seen, with its environment. */
  entries(): IngestLogRecord[] {
    return [...this.byItem.values()].map((o) => {
      // A codec's warnings are told beside an acceptance; a problem, if any, comes first.
      const first =
        o.problems[0] ??
        (o.warnings && {
          code: 'PARSER_CODEC_WARNINGS' as const,
          message: `codec warnings: ${o.warnings.join('; ')}`,
        });
      const outcome =
        o.problems.length === 0
          ? 'accepted'
          : o.failure === null && (o.acceptedValues > 0 || o.readings > o.problems.length)
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
        // Timer ticks never reach the log: the processor takes them out first (ticks.ts).
        gateway: o.item.gateway as IngestGateway,
        deviceName: o.deviceName,
        outcome,
        code: first?.code ?? null,
        message,
        definitionVersion: o.definitionVersion,
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
