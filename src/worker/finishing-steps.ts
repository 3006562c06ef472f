/**
 * The steps of one loop whose history is still being written while the loop processes the next: a
 * slow InfluxDB write then holds up history only, not state. Memory stays bounded: the loop starts
 * no step while `maxInFlight` are finishing. Counted per partition too, since a partition is handed
 * back only once none of its steps is finishing.
 */
export class FinishingSteps {
  private readonly maxInFlight: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Partition → its steps still finishing. */
  private readonly byPartition = new Map<number, number>();

  constructor(maxInFlight: number) {
    this.maxInFlight = maxInFlight;
  }

  /** Steps finishing now. */
  get size(): number {
    return this.inFlight.size;
  }

  /** Whether a step of `partition` is finishing. */
  has(partition: number): boolean {
    return this.byPartition.has(partition);
  }

  /**
   * Runs `finish` in the background, its partitions counted as finishing until it and, when it
   * fails, `failed` are done. Answers when it is done; never rejects.
   */
  add(
    partitions: readonly number[],
    finish: () => Promise<void>,
    failed: (err: unknown) => Promise<void>,
  ): Promise<void> {
    const distinct = [...new Set(partitions)];
    for (const p of distinct) this.byPartition.set(p, (this.byPartition.get(p) ?? 0) + 1);
    const tracked: Promise<void> = finish()
      .catch(failed)
      .finally(() => {
        this.inFlight.delete(tracked);
        for (const p of distinct) this.ended(p);
      });
    this.inFlight.add(tracked);
    return tracked;
  }

  /**
   * Waits while the steps finishing are at the limit, or while `mustEnd()` says that those in
   * flight must end before the loop goes on.
   */
  async settle(mustEnd: () => boolean): Promise<void> {
    while (this.inFlight.size > 0 && (this.inFlight.size >= this.maxInFlight || mustEnd())) {
      await this.anyEnded();
    }
  }

  /** Settles once one of the steps finishing now is done; never while none is. */
  anyEnded(): Promise<void> {
    return Promise.race(this.inFlight);
  }

  /** Waits for every step finishing now. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private ended(partition: number): void {
    const n = (this.byPartition.get(partition) ?? 1) - 1;
    if (n > 0) this.byPartition.set(partition, n);
    else this.byPartition.delete(partition);
  }
}
