/**
 * docker-compose.yml and the Dockerfile cannot run here (no Docker engine): this reads them and
 * checks what the deployment promises — every role its own service, Redis durability settings,
 * InfluxDB 1.11, Grafana with Vigil's provisioning, health checks on /healthz.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PUBLIC_DEMO } from '../../../src/config/public-demo.ts';

const root = join(import.meta.dirname, '../../..');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
}

const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const svc = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s;
};

describe('docker-compose.yml', () => {
  it('runs each Vigil role as its own service against the compose Redis and InfluxDB', () => {
    for (const role of ['gateway', 'mqtt', 'worker', 'api', 'scheduler', 'notifier']) {
      expect(svc(role).environment, role).toMatchObject({
        VIGIL_ROLES: role,
        VIGIL_REDIS_URL: 'redis://redis:6379',
        VIGIL_INFLUX_URL: 'http://influxdb:8086',
      });
      expect(svc(role).build).toBe('.');
      const probe = svc(role).healthcheck?.test.join(' ') ?? '';
      expect(probe, role).toContain(role === 'api' ? '127.0.0.1:8080/healthz' : '127.0.0.1:9464/healthz');
    }
    expect(svc('worker').deploy?.replicas).toBe(2);
    expect(svc('api').ports).toContain('${VIGIL_BIND:-127.0.0.1}:8080:8080');
    expect(svc('gateway').ports).toContain('${VIGIL_BIND:-127.0.0.1}:8081:8081');
    expect(svc('mqtt').ports).toContain('${VIGIL_BIND:-127.0.0.1}:1883:1883');
  });

  it('configures Redis for durability and a queue that is never evicted, InfluxDB 1.11 and Grafana with provisioning', () => {
    expect(svc('redis').image).toBe('redis:7');
    expect(svc('redis').command?.join(' ')).toBe(
      'redis-server --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --hash-max-listpack-value 128',
    );
    expect(svc('influxdb').image).toBe('influxdb:1.11');
    expect(svc('grafana').ports).toContain('127.0.0.1:3000:3000');
    expect(svc('grafana').volumes).toEqual(
      expect.arrayContaining([
        './grafana/provisioning:/etc/grafana/provisioning:ro',
        './grafana/dashboards:/var/lib/grafana/dashboards:ro',
      ]),
    );
  });
});

describe('what the deployment exposes', () => {
  const published = Object.entries(compose.services).flatMap(([name, s]) =>
    (s.ports ?? []).map((p) => ({ name, port: String(p) })),
  );
  const vigilRoles = ['gateway', 'mqtt', 'worker', 'scheduler', 'api', 'notifier'];

  it('publishes Grafana and InfluxDB on 127.0.0.1 only, and Vigil on VIGIL_BIND (127.0.0.1 unless set)', () => {
    expect(published.length).toBeGreaterThanOrEqual(5);
    for (const { name, port } of published) {
      const bind = vigilRoles.includes(name) ? '${VIGIL_BIND:-127.0.0.1}' : '127.0.0.1';
      expect(port.startsWith(`${bind}:`), `${name} publishes ${port}`).toBe(true);
    }
  });

  it('has no default Grafana admin password: compose refuses to start without one', () => {
    const grafana = svc('grafana').environment ?? {};
    expect(grafana.GF_SECURITY_ADMIN_PASSWORD).toMatch(/^\$\{[A-Z_]+:\?[^}]+\}$/);
    expect(grafana).not.toHaveProperty('GF_AUTH_ANONYMOUS_ENABLED', 'true');
  });

  it("bakes no secrets key and never the demo's into the image or the services", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const composeText = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    for (const text of [dockerfile, composeText]) {
      expect(text).not.toContain(PUBLIC_DEMO.secretsKey);
      expect(text).not.toContain(PUBLIC_DEMO.apiKey);
      expect(text).not.toMatch(/VIGIL_DEMO\b/);
    }
    expect(dockerfile).not.toMatch(/VIGIL_SECRETS_KEY/);
    for (const [name, s] of Object.entries(compose.services)) {
      const key = s.environment?.VIGIL_SECRETS_KEY;
      if (key !== undefined) expect(key, name).toMatch(/^\$\{VIGIL_SECRETS_KEY(:-)?\}$/);
    }
    // The compose file asks for secrets in an .env file beside it: never copied into the image.
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['.env', '.env.*']));
  });
});

describe('Dockerfile', () => {
  it('builds on node:24-slim with production dependencies and starts src/main.ts without the node snapshot', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:24-slim$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toContain('CMD ["node", "--no-node-snapshot", "src/main.ts"]');
  });
});
