import { Counter, Gauge, type Registry } from 'prom-client';
import type { Sandbox } from './sandbox.ts';

/**
 * The worker sandbox's metrics (`vigil_sandbox_*`), read from the sandbox when scraped: each
 * environment's parser time, and the isolates alive and created (a count of created isolates that
 * keeps rising means more environments are active than VIGIL_SANDBOX_MAX_ISOLATES keeps).
 */
export function registerSandboxMetrics(
  registry: Registry,
  sandbox: Pick<Sandbox, 'cpuTimeByEnv' | 'stats'>,
): void {
  const registers = [registry];
  const reportedMs = new Map<string, number>();
  new Counter({
    name: 'vigil_sandbox_cpu_seconds_total',
    help: "Time each environment's parsers ran in this process's sandbox (pre-parser and definitions, loading included), in seconds.",
    labelNames: ['env'],
    registers,
    collect() {
      for (const [env, ms] of sandbox.cpuTimeByEnv()) {
        const deltaMs = ms - (reportedMs.get(env) ?? 0);
        if (deltaMs <= 0) continue;
        this.inc({ env }, deltaMs / 1000);
        reportedMs.set(env, ms);
      }
    },
  });
  new Gauge({
    name: 'vigil_sandbox_isolates',
    help: 'Parser isolates alive in this process, one per environment at most.',
    registers,
    collect() {
      this.set(sandbox.stats().isolates);
    },
  });
  let reportedCreated = 0;
  new Counter({
    name: 'vigil_sandbox_isolates_created_total',
    help: "Parser isolates created: an environment's first payload, and its next one after its isolate was dropped (idle, beyond the bound) or replaced (memory limit).",
    registers,
    collect() {
      const created = sandbox.stats().isolatesCreated;
      if (created > reportedCreated) this.inc(created - reportedCreated);
      reportedCreated = created;
    },
  });
}
