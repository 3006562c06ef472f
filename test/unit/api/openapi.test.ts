/**
 * The OpenAPI document against the app that serves it: every mounted route with its methods and
 * the attributes its schema declares, canonical types for the text forms, and a document that is
 * structurally OpenAPI 3.1 (checked here for the parts Vigil uses, without a validator library).
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { apiRoutes, createApiApp, type ApiDeps } from '../../../src/api/api-app.ts';
import type { ApiRoute } from '../../../src/api/api-route.ts';
import { buildOpenApiDocument, openApiPath } from '../../../src/api/openapi.ts';
import { loadConfig } from '../../../src/config/load-config.ts';

/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access,
   @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument --
   the document is plain JSON, walked at run time. */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// Building routes and the app does no I/O: the adapters are only used by requests.
const deps = {
  config: loadConfig({}, { ingestLogSize: 500 }),
  keys: {},
  redis: {},
  influx: {},
  tenancy: {},
  ingestLog: {},
  log: {},
} as unknown as ApiDeps;
const routes = apiRoutes(deps);
const doc: Json = JSON.parse(JSON.stringify(buildOpenApiDocument(routes)));

/** The attributes a route's schema declares, and which are required. */
function declared(route: ApiRoute): { name: string; required: boolean }[] {
  const object = (route.attributes as unknown as { out: z.ZodObject }).out;
  return Object.entries(object.shape).map(([name, schema]) => ({
    name,
    required: !schema.safeParse(undefined).success,
  }));
}

/** [path, method] of every route express has mounted. */
function mounted(): [string, string][] {
  const app = createApiApp(deps) as unknown as { router: { stack: { route?: Json }[] } };
  return app.router.stack.flatMap(({ route }) =>
    route ? Object.keys(route.methods as object).map((m): [string, string] => [route.path as string, m]) : [],
  );
}

describe('the OpenAPI document', () => {
  it('describes every mounted route with its methods', () => {
    const operations = mounted().filter(([, method]) => method !== '_all');
    expect(operations.length).toBeGreaterThan(20);
    for (const [path, method] of operations) {
      expect(doc.paths[openApiPath(path)]?.[method], `${method} ${path}`).toBeDefined();
    }
  });

  it('gives each route the attributes its schema declares, as GET parameters and POST body', () => {
    for (const route of routes) {
      const attributes = declared(route);
      for (const path of route.paths) {
        const item = doc.paths[openApiPath(path)];
        const pathParams = [...path.matchAll(/:(\w+)/g)].map(([, name]) => name);
        if (route.methods.includes('GET')) {
          const query = (item.get.parameters as Json[]).filter((p) => p.in === 'query');
          expect(
            query.map((p) => [p.name, p.required]),
            path,
          ).toEqual(attributes.map((a) => [a.name, a.required]));
        }
        if (route.methods.includes('POST')) {
          const body = item.post.requestBody.content['application/json'].schema;
          expect(Object.keys(body.properties ?? {}), path).toEqual(attributes.map((a) => a.name));
          expect(body.required ?? [], path).toEqual(attributes.filter((a) => a.required).map((a) => a.name));
          expect(item.post.requestBody.required).toBe(attributes.some((a) => a.required));
        }
        for (const op of Object.values<Json>(item)) {
          const inPath = ((op.parameters ?? []) as Json[]).filter((p) => p.in === 'path');
          expect(inPath.map((p) => p.name)).toEqual(pathParams);
        }
      }
    }
  });

  it('documents the canonical types, not the text forms the query string carries', () => {
    const param = (path: string, name: string): Json =>
      (doc.paths[path].get.parameters as Json[]).find((p) => p.name === name)!.schema;
    expect(param('/sensors/export', 'startUTC')).toEqual({
      type: 'number',
      minimum: 0,
      maximum: 253402300799,
    });
    expect(param('/devices/listByDefinitionName', 'definitionIsPublic')).toEqual({ type: 'boolean' });
    expect(param('/sensors/batchList', 'devices')).toMatchObject({
      type: 'array',
      maxItems: 1000,
      items: { type: 'string' },
    });
    expect(param('/events/list', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 10000 });
    expect(param('/ingest/log', 'limit')).toMatchObject({ type: 'integer', maximum: 500 });
    const body = doc.paths['/sensors/batchDetails'].post.requestBody.content['application/json'].schema;
    expect(body.properties.sensors.items.required).toEqual(['deviceName', 'sensorName']);
    expect(body.additionalProperties).toBeUndefined();
  });

  it('is structurally an OpenAPI 3.1 document', () => {
    expect(openApi31Problems(doc)).toEqual([]);
  });
});

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** What keeps `d` from being an OpenAPI 3.1 document, in the parts this API uses. */
function openApi31Problems(d: Json): string[] {
  const problems: string[] = [];
  const expectThat = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  expectThat(/^3\.1\.\d+$/.test(d.openapi), 'openapi is 3.1.x');
  expectThat(typeof d.info?.title === 'string' && typeof d.info?.version === 'string', 'info.title/version');
  const schemes = Object.keys(d.components?.securitySchemes ?? {});
  for (const [path, item] of Object.entries(d.paths as Json)) {
    expectThat(path.startsWith('/'), `${path}: starts with /`);
    const templated = [...path.matchAll(/\{(\w+)\}/g)].map(([, n]) => n);
    for (const [method, op] of Object.entries(item as Json)) {
      const at = `${method} ${path}`;
      expectThat(METHODS.has(method), `${at}: a method`);
      const params = (op.parameters ?? []) as Json[];
      for (const p of params) {
        expectThat(typeof p.name === 'string', `${at}: parameter name`);
        expectThat(['query', 'header', 'path', 'cookie'].includes(p.in), `${at} ${p.name}: in`);
        expectThat(typeof p.schema === 'object', `${at} ${p.name}: schema`);
        if (p.in === 'path')
          expectThat(p.required === true && templated.includes(p.name), `${at} ${p.name}: path`);
      }
      const keys = params.map((p) => `${p.in}:${p.name}`);
      expectThat(new Set(keys).size === keys.length, `${at}: unique parameters`);
      for (const name of templated) expectThat(keys.includes(`path:${name}`), `${at}: parameter ${name}`);
      if (op.requestBody)
        expectThat(Object.keys(op.requestBody.content ?? {}).length > 0, `${at}: body content`);
      const responses = Object.entries((op.responses ?? {}) as Json);
      expectThat(responses.length > 0, `${at}: responses`);
      for (const [status, r] of responses) {
        expectThat(/^([1-5]\d\d|[1-5]XX|default)$/.test(status), `${at}: status ${status}`);
        expectThat(
          typeof r.$ref === 'string' || typeof r.description === 'string',
          `${at} ${status}: description`,
        );
      }
      for (const requirement of (op.security ?? []) as Json[]) {
        for (const name of Object.keys(requirement))
          expectThat(schemes.includes(name), `${at}: scheme ${name}`);
      }
    }
  }
  walk(d, '#');
  return problems;

  /** Every $ref resolves; every schema-like node has valid types and required names. */
  function walk(node: unknown, at: string): void {
    if (typeof node !== 'object' || node === null) return;
    const n = node as Json;
    if (typeof n.$ref === 'string') expectThat(resolve(n.$ref) !== undefined, `${at}: $ref ${n.$ref}`);
    if (n.type !== undefined && at.includes('schema')) {
      const types: unknown[] = Array.isArray(n.type) ? n.type : [n.type];
      expectThat(
        types.every((t) => JSON_TYPES.has(t as string)),
        `${at}: type ${String(n.type)}`,
      );
    }
    if (Array.isArray(n.required) && n.properties) {
      for (const r of n.required) expectThat(r in n.properties, `${at}: required ${String(r)}`);
    }
    for (const [k, v] of Object.entries(n)) walk(v, `${at}/${k}`);
  }

  function resolve(ref: string): unknown {
    if (!ref.startsWith('#/')) return undefined;
    let at: unknown = d;
    for (const part of ref.slice(2).split('/')) at = (at as Json | undefined)?.[part];
    return at;
  }
}
