/**
 * Live pages. While someone watches an environment, one timer per environment (VIGIL_CONSOLE_LIVE_MS)
 * reads a few keys that change whenever anything of it does — the head of its ingestion log (every
 * processed payload), the counter its devices' recent payloads raise (written a moment after their
 * step), its newest event (thresholds, lost and restored contact), its device count — and when
 * they change, every open page of it renders its regions again and its server-sent-event stream
 * carries what differs. Reads behind the regions (the fleet, a device) are shared by all pages and
 * clients of the environment until the next change.
 *
 * Polling a handful of keys per environment, rather than reading the event outbox: a payload that
 * changes no status creates no event, yet changes the page (a value, a last contact), and one read
 * per interval costs the same whether 1 or 100 pages are open.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Response } from 'express';
import { LRUCache } from 'lru-cache';
import type { EventKeys } from '../events/event-keys.ts';
import type { IngestKeys } from '../ingest/ingest-keys.ts';
import { startPeriodic, type Periodic } from '../lib/periodic.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { RecentPayloadKeys } from '../recent-payloads/recent-payload-keys.ts';
import type { ConsoleKeys } from './console-keys.ts';
import type { Region } from './views/regions.ts';

/** A page's live view: how to render its regions now. */
export interface LiveView {
  regions(): Promise<Region[]>;
}

/** What a stream's page holds: a digest of each block region, the order and digests of each row region. */
interface Held {
  blocks: Map<string, string>;
  rows: Map<string, { order: string; rows: Map<string, string> }>;
}

/** What one update carries (JSON of the `update` event). */
export interface LiveUpdate {
  html?: Record<string, string>;
  rows?: Record<string, { order?: string[]; set: Record<string, string> }>;
  data?: Record<string, unknown>;
}

export interface LiveHub {
  /**
   * `compute`'s value, shared by every caller for the same environment and key until the
   * environment changes (at most `maxAgeMs` old when nobody watches it; `minAgeMs` at least).
   */
  shared<T>(env: string, key: string, compute: () => Promise<T>, opts?: { minAgeMs?: number }): Promise<T>;
  /** Marks the environment changed (an acknowledgement made here): pages render again at once. */
  changed(env: string): void;
  /** Remembers what a page was rendered with; the token lets its stream send only what changes. */
  baseline(regions: Region[]): string;
  /** Serves a page's stream on `res` until the client leaves, the session ends or the hub closes. */
  stream(o: StreamOptions): void;
  /** Streams open for a session. */
  streamsOf(sessionKey: string): number;
  /** Ends a session's streams (sign-out). */
  endSession(sessionKey: string): void;
  close(): void;
}

export interface StreamOptions {
  env: string;
  sessionKey: string;
  res: Response;
  view: LiveView;
  baseline?: string | undefined;
  /** Whether the session still holds (checked now and then). */
  sessionValid: () => Promise<boolean>;
}

/** Pages render again at least this often, changed or not (states that change with time: silence, suppressions ending). */
const FORCE_MS = 15_000;
const KEEPALIVE_MS = 20_000;

interface Stream {
  env: string;
  sessionKey: string;
  res: Response;
  view: LiveView;
  held: Held;
  rendering: boolean;
  again: boolean;
  end(reason?: string): void;
}

interface Watch {
  generation: number;
  signal: string;
  forcedMs: number;
  streams: Set<Stream>;
  /** The environment's look for changes: at once, then an interval after each. */
  looks: Periodic;
}

export function createLiveHub(deps: {
  redis: Redis;
  keys: TenancyKeys & EventKeys & IngestKeys & ConsoleKeys & RecentPayloadKeys;
  log: Logger;
  intervalMs: number;
  /** How often an open stream checks that its session still holds, in ms. */
  sessionCheckMs: number;
  clock?: () => number;
}): LiveHub {
  const clock = deps.clock ?? Date.now;
  const watches = new Map<string, Watch>();
  const cache = new LRUCache<string, { generation: number; atMs: number; value: Promise<unknown> }>({ max: 2000 });
  const baselines = new LRUCache<string, Held>({ max: 500, ttl: 120_000 });
  const tokens = new WeakMap<readonly Region[], string>();
  const bySession = new Map<string, Set<Stream>>();
  let closed = false;

  async function readSignal(env: string): Promise<string> {
    const { keys } = deps;
    const replies = await deps.redis
      .pipeline()
      .lindex(keys.ingestLog(env), 0)
      .get(keys.recentPayloadsWritten(env))
      .zrevrange(keys.envEvents(env), 0, 0, 'WITHSCORES')
      .zcard(keys.devices(env))
      // Raised by every management change (a device's labels, a rule), from any process.
      .hget(keys.catalogEpochs(), env)
      .exec();
    return JSON.stringify((replies ?? []).map(([err, v]) => (err ? null : v)));
  }

  async function tick(env: string, w: Watch): Promise<void> {
    const signal = await readSignal(env);
    const now = clock();
    if (signal !== w.signal || now - w.forcedMs >= FORCE_MS) {
      w.signal = signal;
      w.forcedMs = now;
      bump(w);
    }
  }

  function bump(w: Watch): void {
    w.generation += 1;
    for (const s of w.streams) void refresh(s);
  }

  function watch(env: string): Watch {
    let w = watches.get(env);
    if (!w) {
      const created: Watch = {
        generation: 1,
        signal: '',
        forcedMs: clock(),
        streams: new Set(),
        looks: startPeriodic({
          intervalMs: deps.intervalMs,
          firstRunAfterMs: 0,
          unref: true,
          run: () => tick(env, created),
          onError: (err) => deps.log.warn({ env, err }, 'console live check failed'),
        }),
      };
      w = created;
      watches.set(env, w);
    }
    return w;
  }

  async function refresh(s: Stream): Promise<void> {
    if (s.rendering) {
      s.again = true;
      return;
    }
    s.rendering = true;
    try {
      do {
        s.again = false;
        const update = diff(s.held, await s.view.regions());
        if (update) s.res.write(`event: update\ndata: ${JSON.stringify(update)}\n\n`);
      } while (s.again);
    } catch (err) {
      deps.log.warn({ env: s.env, err }, 'console live render failed');
    } finally {
      s.rendering = false;
    }
  }

  return {
    shared(env, key, compute, opts = {}) {
      const w = watches.get(env);
      const generation = w?.generation ?? 0;
      const now = clock();
      const id = `${env}\n${key}`;
      const hit = cache.get(id);
      const maxAgeMs = w ? FORCE_MS : deps.intervalMs;
      if (hit) {
        const age = now - hit.atMs;
        const fresh = hit.generation === generation && age < maxAgeMs;
        if (fresh || age < (opts.minAgeMs ?? 0)) return hit.value as Promise<never>;
      }
      const value = compute();
      const entry = { generation, atMs: now, value };
      cache.set(id, entry);
      value.catch(() => {
        if (cache.get(id) === entry) cache.delete(id);
      });
      return value;
    },

    changed(env) {
      for (const k of cache.keys()) if (k.startsWith(`${env}\n`)) cache.delete(k);
      const w = watches.get(env);
      if (w) bump(w);
    },

    baseline(regions) {
      // Pages rendered from the same regions (a shared snapshot, fleet-view.ts) share a baseline:
      // a thousand rows are digested once, not once per page served.
      const known = tokens.get(regions);
      if (known && baselines.has(known)) return known;
      const token = randomBytes(12).toString('base64url');
      const held: Held = { blocks: new Map(), rows: new Map() };
      diff(held, regions);
      baselines.set(token, held);
      tokens.set(regions, token);
      return token;
    },

    stream(o) {
      const { res } = o;
      res.status(200);
      res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('X-Accel-Buffering', 'no');
      res.flushHeaders();
      // Copied below: a baseline may serve every page rendered from the same regions.
      const held = (o.baseline && baselines.get(o.baseline)) || { blocks: new Map(), rows: new Map() };
      const w = watch(o.env);
      const stream: Stream = {
        env: o.env,
        sessionKey: o.sessionKey,
        res,
        view: o.view,
        held: copyHeld(held),
        rendering: false,
        again: false,
        end(reason) {
          clearInterval(keepalive);
          void sessionChecks.close();
          w.streams.delete(stream);
          bySession.get(o.sessionKey)?.delete(stream);
          if (bySession.get(o.sessionKey)?.size === 0) bySession.delete(o.sessionKey);
          if (w.streams.size === 0 && watches.get(o.env) === w) {
            void w.looks.close();
            watches.delete(o.env);
          }
          if (reason && !res.writableEnded) res.write(`event: ${reason}\ndata: {}\n\n`);
          if (!res.writableEnded) res.end();
        },
      };
      w.streams.add(stream);
      const mine = bySession.get(o.sessionKey) ?? new Set<Stream>();
      mine.add(stream);
      bySession.set(o.sessionKey, mine);
      res.on('close', () => stream.end());
      res.write(`retry: 3000\n\n`);
      // A comment line now and then keeps proxies from closing an idle stream. A plain timer, not
      // lib/periodic.ts: one synchronous write that cannot fail (a closed response ends the stream)
      // and leaves nothing to wait for, at the rate the proxies' idle timeouts need.
      const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
      const sessionChecks = startPeriodic({
        intervalMs: deps.sessionCheckMs,
        unref: true,
        run: async () => {
          if (!(await o.sessionValid())) stream.end('signed-out');
        },
        // Not known now (Redis unreachable): the stream stays, and the next check tries again.
        onError: () => undefined,
      });
      // Whatever changed between the page's render and now.
      void refresh(stream);
    },

    streamsOf: (sessionKey) => bySession.get(sessionKey)?.size ?? 0,

    endSession(sessionKey) {
      for (const s of [...(bySession.get(sessionKey) ?? [])]) s.end('signed-out');
    },

    close() {
      if (closed) return;
      closed = true;
      for (const w of watches.values()) for (const s of [...w.streams]) s.end();
      for (const w of watches.values()) void w.looks.close();
      watches.clear();
    },
  };
}

const digest = (text: string): string => createHash('sha1').update(text).digest('base64url');

function copyHeld(h: Held): Held {
  return {
    blocks: new Map(h.blocks),
    rows: new Map([...h.rows].map(([id, r]) => [id, { order: r.order, rows: new Map(r.rows) }])),
  };
}

/** What of `regions` differs from `held` (which is brought up to date), or undefined when nothing does. */
function diff(held: Held, regions: readonly Region[]): LiveUpdate | undefined {
  const update: LiveUpdate = {};
  let any = false;
  for (const r of regions) {
    if ('html' in r) {
      const d = digest(r.html.text);
      if (held.blocks.get(r.id) === d) continue;
      held.blocks.set(r.id, d);
      (update.html ??= {})[r.id] = r.html.text;
      any = true;
    } else if ('data' in r) {
      const text = JSON.stringify(r.data);
      const d = digest(text);
      if (held.blocks.get(r.id) === d) continue;
      held.blocks.set(r.id, d);
      (update.data ??= {})[r.id] = r.data;
      any = true;
    } else {
      const before = held.rows.get(r.id) ?? { order: '', rows: new Map<string, string>() };
      const rows = new Map<string, string>();
      const set: Record<string, string> = {};
      let changed = false;
      for (const row of r.rows) {
        const d = digest(row.html.text);
        rows.set(row.key, d);
        if (before.rows.get(row.key) !== d) {
          set[row.key] = row.html.text;
          changed = true;
        }
      }
      const keys = r.rows.map((x) => x.key);
      const order = digest(keys.join('\u0000'));
      held.rows.set(r.id, { order, rows });
      if (!changed && order === before.order) continue;
      (update.rows ??= {})[r.id] = order === before.order ? { set } : { order: keys, set };
      any = true;
    }
  }
  return any ? update : undefined;
}
