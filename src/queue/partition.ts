/**
 * The ingest queue is partitioned: a payload goes to the partition of its routing key (the device
 * when the gateway knows it, else the API key), and each partition is read by one worker step at a
 * time in acceptance order (ingest-queue.ts). So a device's payloads reach the state step in the
 * order they were accepted, whatever the number of workers — the events equal those of an
 * in-order run.
 *
 * The partition of a routing key: FNV-1a, stable across processes and restarts.
 */
export function partitionOf(routingKey: string, partitions: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < routingKey.length; i++) {
    h ^= routingKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}
