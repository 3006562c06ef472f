/**
 * Side by side (`--lockstep DIR:ME:OTHER`): two bench runs started together, usually of two builds
 * from two worktrees (bench/side-by-side.ts), wait for each other before every measured HTTP load,
 * so that both measure the same minutes of the host. This host's speed moves by tens of per cent
 * from one minute to the next; measured in the same minutes, a pair's ratio compares the builds
 * rather than the minutes. Each run marks a step with a file in DIR and polls for the other's.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Longest wait for the other run at one step: it failed or was stopped. */
const MAX_WAIT_MS = 10 * 60_000;
const POLL_MS = 10;

let pair: { dir: string; me: string; other: string } | undefined;
let step = 0;

/** Turns the lockstep on (`DIR:ME:OTHER`), or off without a value. */
export function configureLockstep(value: string | undefined): void {
  step = 0;
  if (value === undefined) {
    pair = undefined;
    return;
  }
  const [dir, me, other, ...rest] = value.split(':');
  if (!dir || !me || !other || rest.length > 0 || me === other)
    throw new Error(`--lockstep expects DIR:ME:OTHER (two different names), got ${value}`);
  pair = { dir, me, other };
}

/** Returns once the other run has reached this step too; at once without a lockstep. */
export async function lockstep(): Promise<void> {
  if (!pair) return;
  const n = step++;
  writeFileSync(join(pair.dir, `${n}.${pair.me}`), '');
  const deadline = Date.now() + MAX_WAIT_MS;
  while (!existsSync(join(pair.dir, `${n}.${pair.other}`))) {
    if (Date.now() > deadline)
      throw new Error(
        `lockstep: run ${pair.other} did not reach step ${n} within ${MAX_WAIT_MS / 60_000} minutes`,
      );
    await sleep(POLL_MS);
  }
}
