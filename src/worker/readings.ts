/**
 * What a queued submission becomes on its way through a worker step: a reading (preparse.ts), then
 * resolved to its device and definition (resolve.ts), then parsed into values (parse.ts). One
 * object per reading, filled in step by step.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import type { NetworkData } from '../domain/network-messages.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';

/**
 * One reading on its way through a step. The later steps fill in `device` and `definition`
 * (resolveDevices) and `values` (parseReadings) on the same object rather than copying it: a drain
 * step carries thousands of them.
 */
export interface Reading {
  item: IngestItem;
  deviceName: string;
  /** What the definition parser receives as payloadStr. */
  payloadStr: string;
  /** Measurement time, epoch ms. */
  timeMs: number;
  /** The device (pre-parser) supplied the time; history is then exactly-once. */
  deviceTime: boolean;
  /** Position among the readings the pre-parser made of one submission. */
  index: number;
  /** preparseronly gateways: payloadStr is already the data point map (no definition parser). */
  direct: boolean;
  /**
   * A network server's uplink or status report: the frame a codec decodes (payloadStr is then its
   * bytes as hex, for a parsePayload parser) and the radio metadata data points may take.
   */
  network?: NetworkData;
  /** Set by resolveDevices. */
  device: DeviceRecord | null;
  definition: DefinitionRecord | null;
  /** Data point name → value as the parser returned it; set by parseReadings. */
  values: Record<string, unknown> | null;
}

/** A reading whose device and definition are known. */
export interface ResolvedReading extends Reading {
  device: DeviceRecord;
  definition: DefinitionRecord;
}

/** A resolved reading with the values its parser returned. */
export interface ParsedReading extends ResolvedReading {
  values: Record<string, unknown>;
}
