/**
 * Layout 3: data points are stored in point layout 2 (point-record.ts), which adds what rules that
 * wait (`for`) and stale rules need: the current value's receive time, the rules it meets that wait,
 * and the value as shown. Each data point stored in point layout 1 (point-record-v1.ts) is rewritten
 * with its receive time taken as its device's last contact (else its measurement time) — the
 * latest it can have been, so no data point goes stale early — and nothing waiting. Status, rule
 * and every other field stay as they were: no event, no alarm, no notification.
 */
import type { Migration } from './migrations.ts';
import type { StateKeys } from './state-keys.ts';

/**
 * Rewrites the layout-1 data points of one device's state hash (KEYS[1]) in layout 2, in one
 * atomic step; points in layout 2 already are left alone, so a migration that stopped half-way
 * resumes. Returns the number rewritten.
 */
const REWRITE_POINTS = `
local V1, V2 = '<Bdddddddddddss', '<BddddddddddddsssI4c0'
local lc = tonumber(redis.call('HGET', KEYS[1], '@lc'))
local all = redis.call('HGETALL', KEYS[1])
local out, n = {}, 0
for i = 1, #all, 2 do
  local field, raw = all[i], all[i + 1]
  if string.sub(field, -2) == '|p' and string.byte(raw, 1) == 1 then
    local _, u, t, r, ls, ss, hh, hn, hs, hmin, hmax, hlate, s, ri = struct.unpack(V1, raw)
    out[#out + 1] = field
    out[#out + 1] = struct.pack(V2, 2, u, t, r, ls, ss, hh, hn, hs, hmin, hmax, hlate, lc or u, s, ri, '', 0, '')
    n = n + 1
  end
end
if n > 0 then redis.call('HSET', KEYS[1], unpack(out)) end
return n`;

export const repackPoints: Migration<StateKeys> = {
  version: 3,
  description: 'store every data point in point layout 2 (receive time, waiting rules, shown value)',
  async run({ redis, keys, log, signal }) {
    let cursor = '0';
    let points = 0;
    do {
      signal.throwIfAborted();
      const [next, batch] = await redis.scan(cursor, 'MATCH', keys.stateHashes(), 'COUNT', 500);
      cursor = next;
      if (batch.length === 0) continue;
      const pipeline = redis.pipeline();
      for (const key of batch) pipeline.eval(REWRITE_POINTS, 1, key);
      for (const [err, n] of (await pipeline.exec()) ?? []) {
        if (err) throw err;
        points += n as number;
      }
    } while (cursor !== '0');
    log.info({ points }, 'data points stored in point layout 2');
  },
};
