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
