/**
 * A write guarded by a partition lease was refused, or skipped, because the lease changed hands
 * since the work began: the work is stale (its worker stalled past the lease) and another worker
 * does it again. Not a failure to retry.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(what = 'a partition lease changed hands: the step is stale and was refused') {
    super(what);
  }
}
