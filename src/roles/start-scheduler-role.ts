/**
 * The `scheduler` role: availability checks, device timers, and the repair of hourly rollups that
 * late values left inexact (the scheduler's upkeep too: every installation runs one).
 */
import { startRollupRepair } from '../history/start-rollup-repair.ts';
import { startAvailabilityScheduler } from '../scheduler/availability-scheduler.ts';
import { startDeviceTimers } from '../scheduler/device-timers.ts';
import type { RoleContext } from './role-context.ts';

/** Starts the scheduler role's parts, each registered to stop in `ctx.lifecycle`. */
export function startSchedulerRole(ctx: RoleContext): void {
  const { config, redis, keys, log, lifecycle } = ctx;
  const clock = ctx.options.clock ? { clock: ctx.options.clock } : {};
  const scheduler = startAvailabilityScheduler({
    redis,
    keys,
    state: ctx.state,
    catalog: ctx.catalog,
    log,
    intervalMs: config.availabilityCheckMs,
    ...clock,
  });
  lifecycle.add('scheduler', () => scheduler.close());
  const timers = startDeviceTimers({
    redis,
    keys,
    partitions: config.queuePartitions,
    log,
    intervalMs: config.timerCheckMs,
    ...clock,
  });
  lifecycle.add('device timers', () => timers.close());
  const repair = startRollupRepair({
    config,
    connections: ctx.connections,
    keys,
    influx: ctx.influx,
    log,
    metrics: ctx.metrics,
  });
  lifecycle.add('rollup repair', () => repair.close());
}
