/**
 * The Vigil process of a benchmark scenario: `startVigil` with the roles of VIGIL_ROLES (config
 * from VIGIL_ variables), driven by the bench over IPC: `ready` with the ports, `stats` (memory, optionally after a full GC),
 * `stop` (graceful close). It exits by itself when the bench goes away.
 * `--no-late-writes`: the worker records no late values (StartOptions.lateWrites), to measure
 * what that costs.
 */
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { loadConfig } from '../src/config/load-config.ts';
import { createLogger } from '../src/log/logger.ts';
import { startVigil } from '../src/main.ts';

export interface HostPorts {
  gateway: number;
  mqtt: number;
  api: number;
  /** Where /metrics answers: the ops port, which every process opens. */
  metrics: number;
}

export type HostMessage =
  | { type: 'ready'; ports: HostPorts }
  | {
      type: 'stats';
      rssBytes: number;
      heapUsedBytes: number;
      /** process.memoryUsage() in full: where RSS goes (V8 heap reserved, buffers, native). */
      memory: NodeJS.MemoryUsage;
      /** MB committed per V8 heap space (new_space, old_space, code_space, large_object_space, …). */
      spaces: Record<string, number>;
    }
  | { type: 'stopped' };

const { values: args } = parseArgs({ options: { 'no-late-writes': { type: 'boolean', default: false } } });
const config = loadConfig();
const log = createLogger(config.logLevel);
const vigil = await startVigil(config, log, { lateWrites: !args['no-late-writes'] });
const send = (m: HostMessage) => process.send?.(m);
process.on('message', (m: { type?: string; gc?: boolean }) => {
  if (m.type === 'stats') {
    // With `gc`, a full collection first (the bench starts hosts with --expose-gc): what is left
    // is what the process really holds, the measure of a leak; RSS also counts heap headroom.
    const gc = (globalThis as { gc?: () => void }).gc;
    if (m.gc && gc) gc();
    const mem = process.memoryUsage();
    const spaces = Object.fromEntries(
      getHeapSpaceStatistics().map((sp) => [sp.space_name, Math.round(sp.space_size / 2 ** 20)]),
    );
    send({ type: 'stats', rssBytes: mem.rss, heapUsedBytes: mem.heapUsed, memory: mem, spaces });
  } else if (m.type === 'stop') {
    // Stopped either way: what failed to stop is in the log.
    const stopped = () => {
      send({ type: 'stopped' });
      process.disconnect();
    };
    void vigil.close().then(stopped, stopped);
  }
});
// The bench going away (even killed) must not leave this process behind.
process.on('disconnect', () => setTimeout(() => process.exit(0), 2000).unref());
const { api, gateway, mqtt, ops } = vigil.ports;
send({ type: 'ready', ports: { gateway, mqtt, api, metrics: ops } });
