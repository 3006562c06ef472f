/**
 * A Redis command as data: its name and arguments. Work that must land together with something
 * else (the ingestion log with the acknowledgement of the step that produced it) is handed over as
 * commands, so the code that runs them decides how: a pipeline, or one Lua script that runs them
 * only while a condition holds (the worker's fenced acknowledgement, queue/fenced-step.ts).
 */
import type { ChainableCommander } from 'ioredis';

export type RedisCommand = readonly [name: string, ...args: (string | number)[]];

/** Queues `commands` on a pipeline or MULTI. */
export function queueCommands(target: ChainableCommander, commands: readonly RedisCommand[]): void {
  for (const [name, ...args] of commands) target.call(name, ...args);
}
