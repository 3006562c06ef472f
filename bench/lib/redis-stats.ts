/** Redis server-side time by command (INFO commandstats), to see which scripts cost what. */
import { Redis as IORedis } from 'ioredis';

export type CommandStats = Map<string, { calls: number; usec: number }>;

export async function commandStats(redisUrl: string): Promise<CommandStats> {
  const redis = new IORedis(redisUrl);
  try {
    const text = await redis.info('commandstats');
    const out: CommandStats = new Map();
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
    }
    return out;
  } finally {
    redis.disconnect();
  }
}

/** The commands that took the most Redis time between two samples, in µs per unit of work. */
export function describeTopCommands(
  before: CommandStats,
  after: CommandStats,
  units: number,
  unit: string,
  top = 6,
): string {
  const rows = [...after].map(([name, a]) => {
    const b = before.get(name) ?? { calls: 0, usec: 0 };
    return { name, calls: a.calls - b.calls, usec: a.usec - b.usec };
  });
  rows.sort((x, y) => y.usec - x.usec);
  const parts = rows
    .slice(0, top)
    .map((r) => `${r.name} ${(r.usec / units).toFixed(1)} µs (${(r.calls / units).toFixed(2)} calls)`);
  return `Redis time per ${unit}: ${parts.join(', ')}`;
}

/**
 * Redis time by script, from the slow log: while sampling, every command of at least `minUs` is
 * logged with its arguments, and EVALSHA calls are told apart by the shape of their first key
 * (digits replaced by #: `bench3:{q}:stream:#` is the queue's, a device hash is its state step's).
 * INFO commandstats lumps every script into `evalsha`.
 */
export interface ScriptSampler {
  /** Redis µs by script per unit of work since the sampler started, most first. */
  stop(units: number, unit: string, top?: number): Promise<string>;
}

export async function sampleScripts(redisUrl: string, minUs = 20): Promise<ScriptSampler> {
  const redis = new IORedis(redisUrl);
  const before = (await redis.config('GET', 'slowlog-*')) as string[];
  const saved = new Map<string, string>();
  for (let i = 0; i < before.length; i += 2) saved.set(before[i]!, before[i + 1]!);
  await redis.config('SET', 'slowlog-log-slower-than', String(minUs), 'slowlog-max-len', '100000');
  await redis.slowlog('RESET');
  return {
    async stop(units, unit, top = 6) {
      try {
        const entries = (await redis.slowlog('GET', -1)) as [number, number, number, string[]][];
        const byScript = new Map<string, { calls: number; usec: number }>();
        for (const [, , usec, args] of entries) {
          const [command = '', sha = '', , firstKey = ''] = args;
          const name =
            command.toLowerCase() === 'evalsha'
              ? `evalsha ${sha.slice(0, 8)} (${firstKey.replace(/\d+/g, '#')})`
              : command.toLowerCase();
          const s = byScript.get(name) ?? { calls: 0, usec: 0 };
          s.calls++;
          s.usec += usec;
          byScript.set(name, s);
        }
        const rows = [...byScript].sort((x, y) => y[1].usec - x[1].usec).slice(0, top);
        return `Redis time per ${unit} by script (commands of ${minUs} µs or more, ${entries.length} logged${entries.length >= 100_000 ? ', the log was FULL' : ''}): ${rows
          .map(([name, s]) => `${name} ${(s.usec / units).toFixed(1)} µs (${(s.calls / units).toFixed(3)} calls)`)
          .join(', ')}`;
      } finally {
        await redis.config(
          'SET',
          'slowlog-log-slower-than',
          saved.get('slowlog-log-slower-than') ?? '10000',
          'slowlog-max-len',
          saved.get('slowlog-max-len') ?? '128',
        );
        await redis.slowlog('RESET');
        redis.disconnect();
      }
    },
  };
}
