/**
 * The OpenAPI 3.1 description served at `GET /openapi.json`, built from the mounted routes: each
 * route's paths and methods, and its parameters and request body generated from its attributes
 * schema (attributes.ts), so the document shows exactly what requests are checked against. The
 * answers' shapes are written here, one entry per route.
 */
import { z } from 'zod';
import type { ApiRoute, RouteAnswer } from './api-route.ts';
import { arrayOf, envelope, json, objectOf, ref, str, ts, type JsonSchema } from './json-schema.ts';

const STATUS_ENUM = { enum: ['SUCCESS', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] };

const sensorCommon = {
  sensorName: str,
  displayName: str,
  sensorType: { type: 'string', examples: ['tempC', 'relativeHumidity', 'lux', 'milliVolts'] },
  currentValue: { type: ['string', 'null'], description: 'Formatted in the environment locale, with units.' },
  rawValue: {
    description: 'The converted value; null before the first value.',
    oneOf: [
      { type: 'number' },
      { type: 'string' },
      { type: 'boolean' },
      { type: 'null' },
      { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } } },
    ],
  },
  suppressed: { type: 'boolean', description: 'True while the data point creates no events (maintenance).' },
  currentStatus: STATUS_ENUM,
  units: str,
};
const utcTimes = { timeSinceLastSuccessUTC: ts, timeSinceCurrentStatusUTC: ts, updatedUTC: ts };

const COMPONENTS = {
  securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'vt_… token' } },
  responses: {
    Error: { description: 'The error envelope', content: json(ref('Error')) },
  },
  schemas: {
    Error: objectOf({
      status: { const: 'error' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: str, message: str, attribute: str, deviceName: str, sensorName: str },
      },
    }),
    Device: objectOf({
      deviceName: str,
      displayName: str,
      definitionIsPublic: { type: 'boolean' },
      definitionName: str,
      lastContactUTC: ts,
      labels: { type: 'object', additionalProperties: str, description: 'Labels by key ({} when none).' },
    }),
    ListedSensor: objectOf({ ...sensorCommon, lastSuccessAt: ts, currentSuccessAt: ts, updatedAt: ts }),
    Sensor: objectOf({ ...sensorCommon, ...utcTimes }),
    SensorDetails: objectOf({ ...sensorCommon, ...utcTimes, last24Hours: arrayOf(ref('Bucket')) }),
    Bucket: objectOf({
      sUTC: { type: 'integer', description: 'Hour start, UNIX seconds.' },
      eUTC: { type: 'integer', description: 'sUTC + 3600.' },
      count: { type: 'integer' },
      total: { type: 'number' },
      max: { type: 'number' },
      min: { type: 'number' },
      avg: { type: 'number' },
    }),
    Event: objectOf({
      deviceName: str,
      displayName: str,
      sensorName: str,
      sensorType: str,
      sensorValue: {},
      eventStatus: STATUS_ENUM,
      eventCategory: { enum: ['Sensors', 'Availability'] },
      eventMessage: str,
      receivedUTC: { type: 'string', format: 'date-time' },
    }),
    Alarm: objectOf({
      deviceName: str,
      displayName: str,
      sensorName: { type: ['string', 'null'], description: 'Null for the device’s Availability alarm.' },
      eventCategory: { enum: ['Sensors', 'Availability'] },
      status: { enum: ['INFO', 'WARNING', 'ERROR', 'CRITICAL'] },
      sinceUTC: { type: 'string', format: 'date-time', description: 'When the alarm opened.' },
      acknowledged: { type: 'boolean' },
      acknowledgedBy: { type: ['string', 'null'], description: 'A username, or token:<name>.' },
      acknowledgedUTC: ts,
      note: { type: ['string', 'null'] },
    }),
    IngestLogEntry: objectOf({
      receivedUTC: { type: 'string', format: 'date-time' },
      ingestId: str,
      gateway: str,
      deviceName: { type: ['string', 'null'] },
      outcome: { enum: ['accepted', 'partial', 'rejected'] },
      code: { type: ['string', 'null'] },
      message: { type: ['string', 'null'] },
      definitionVersion: {
        type: ['integer', 'null'],
        description: "The version of the device's definition that parsed the payload.",
      },
    }),
  },
};

/** What the document says of one route besides its attributes. */
interface Answer extends RouteAnswer {
  /** Other content types of the 200 answer. */
  moreContent?: Record<string, unknown>;
}

const devicesByName = arrayOf(ref('Device'));
const byDevice = (sensor: string) => arrayOf(objectOf({ deviceName: str, sensors: arrayOf(ref(sensor)) }));

/** Keyed by each route's first path. */
const ANSWERS: Record<string, Answer> = {
  '/login/:apiKey': {
    summary: 'Log in: a bearer token for the API key’s environment',
    data: objectOf({ token: str, expiresUTC: { type: 'string', format: 'date-time' } }),
    errors: ['401', '429'],
  },
  '/devices/list': {
    summary: 'Every device of the environment, by deviceName',
    data: devicesByName,
    errors: [],
  },
  '/devices/listByDefinitionName': {
    summary: 'Devices connected to one definition',
    data: devicesByName,
    errors: ['404'],
  },
  '/sensors/list': {
    summary: 'Data points of one device, in definition order',
    data: arrayOf(ref('ListedSensor')),
    errors: ['404'],
  },
  '/sensors/details': {
    summary: 'One data point with its last 24 hours',
    data: ref('SensorDetails'),
    errors: ['404'],
  },
  '/sensors/batchList': {
    summary: 'Data points of many devices, in request order',
    data: byDevice('Sensor'),
    errors: ['404'],
  },
  '/sensors/batchDetails': {
    summary: 'Details of many data points, grouped by device in request order',
    data: byDevice('SensorDetails'),
    errors: ['404'],
  },
  '/sensors/export': {
    summary:
      'Raw history of one data point, oldest first; a limited number of exports per data point and month',
    data: objectOf({
      deviceName: str,
      sensorName: str,
      sensorType: str,
      units: str,
      startUTC: { type: 'number' },
      endUTC: { type: 'number' },
      values: arrayOf(objectOf({ time: { type: 'string', format: 'date-time' }, value: {} })),
    }),
    errors: ['404', '429'],
    moreContent: { 'text/csv': { schema: { type: 'string', description: 'time,value lines' } } },
  },
  '/events/list': {
    summary: 'Events of the environment, newest first (with labels: of the devices that have them)',
    data: arrayOf(ref('Event')),
    errors: [],
  },
  '/devices/events': {
    summary: 'Events of one device, newest first',
    data: arrayOf(ref('Event')),
    errors: ['404'],
  },
  '/alarms/list': {
    summary: 'Open alarms of the environment, most severe first, then oldest',
    data: arrayOf(ref('Alarm')),
    errors: [],
  },
  '/alarms/acknowledge': {
    summary: 'Acknowledge an open alarm (a token with scope write)',
    data: ref('Alarm'),
    errors: ['404'],
  },
  '/ingest/log': {
    summary: 'Latest ingestion outcomes of the environment, newest first',
    data: arrayOf(ref('IngestLogEntry')),
    errors: [],
  },
};

/** Served by the process beside the read API (the ops routes). */
const OPS_PATHS = {
  '/openapi.json': {
    get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1 document' } } },
  },
  '/healthz': { get: { summary: 'Process up (no token)', responses: { '200': { description: 'Up' } } } },
  '/readyz': {
    get: {
      summary: 'Redis and InfluxDB reachable (no token)',
      responses: { '200': { description: 'Ready' }, '503': { description: 'Not ready' } },
    },
  },
  '/metrics': {
    get: { summary: 'Prometheus metrics (no token)', responses: { '200': { description: 'Metrics' } } },
  },
};

/** The document describing `routes`. Throws when a route has no entry in ANSWERS. */
export function buildOpenApiDocument(routes: readonly ApiRoute[]) {
  const paths: Record<string, unknown> = {};
  for (const route of routes) {
    const first = route.paths[0] ?? '';
    const answer = route.answer ?? ANSWERS[first];
    if (!answer) throw new Error(`The OpenAPI document has no answer for ${first}.`);
    const operations = routeOperations(route, answer);
    for (const path of route.paths) paths[openApiPath(path)] = operations;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Vigil read API',
      version: '1.0.0',
      description:
        'Devices, data points, history and events of one environment. Attributes come as a JSON body ' +
        '(any Content-Type), query parameters (numbers and booleans as text, arrays as repeated keys or a JSON ' +
        'array string) or one JSON object as the whole query string (`curl -G -d \'{"deviceName":"x"}\'`); ' +
        "'' or null counts as absent.",
    },
    components: COMPONENTS,
    paths: { ...paths, ...OPS_PATHS },
  };
}

/** `/login/:apiKey` → `/login/{apiKey}`. */
export const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

function routeOperations(route: ApiRoute, answer: Answer) {
  const body = requestSchema(route);
  const properties = (body.properties ?? {}) as Record<string, JsonSchema>;
  const required = (body.required ?? []) as string[];
  const pathParams = [...route.paths[0]!.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: str,
  }));
  const queryParams = Object.entries(properties).map(([name, { description, ...schema }]) => ({
    name,
    in: 'query',
    required: required.includes(name),
    schema,
    ...(description === undefined ? {} : { description }),
  }));
  const common = {
    summary: answer.summary,
    ...(route.auth ? { security: [{ bearer: [] }] } : {}),
  };
  const operations: Record<string, unknown> = {};
  if (route.methods.includes('GET')) {
    operations.get = {
      ...common,
      parameters: [...pathParams, ...queryParams],
      responses: responses(route, answer),
    };
  }
  if (route.methods.includes('POST')) {
    operations.post = {
      ...common,
      ...(route.rawBody
        ? { parameters: [...pathParams, ...queryParams] }
        : pathParams.length > 0
          ? { parameters: pathParams }
          : {}),
      requestBody: route.rawBody
        ? { required: true, content: answer.body ?? {} }
        : { required: required.length > 0, content: json(body) },
      responses: responses(route, answer),
    };
  }
  return operations;
}

/**
 * The attributes as a JSON Schema object, in their canonical types (io 'output': what the text
 * forms become). Unknown attributes are ignored, not refused, so no `additionalProperties: false`.
 */
function requestSchema(route: ApiRoute): JsonSchema {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(route.attributes, {
    io: 'output',
    override: ({ jsonSchema }) => {
      if (jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
    },
  });
  return schema;
}

function responses(route: ApiRoute, answer: Answer) {
  const error = { $ref: '#/components/responses/Error' };
  const refusals = route.auth ? ['401', ...(route.scope === 'read' ? [] : ['403'])] : [];
  const statuses = [...new Set(['400', ...refusals, ...answer.errors, '503'])].sort();
  return {
    '200': {
      description: 'Success',
      content: answer.csv
        ? { 'text/csv': { schema: { type: 'string', description: 'CSV with a header row' } } }
        : { ...json(envelope(answer.data)), ...answer.moreContent },
    },
    ...Object.fromEntries(statuses.map((status) => [status, error])),
  };
}
