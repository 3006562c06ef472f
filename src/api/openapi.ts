/**
 * The OpenAPI 3.1 description served at `GET /openapi.json`: every read-API endpoint, its
 * attributes, its response shape and its errors. Written by hand beside the routes; the API tests
 * check that every endpoint appears here.
 */

const ts = { type: ['string', 'null'], format: 'date-time', description: 'ISO 8601 UTC with milliseconds.' };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const envelope = (data: unknown) => ({
  type: 'object',
  required: ['status', 'data'],
  properties: { status: { const: 'success' }, data },
});
const arrayOf = (items: unknown) => ({ type: 'array', items });

const sensorCommon = {
  sensorName: { type: 'string' },
  displayName: { type: 'string' },
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
  currentStatus: { enum: ['SUCCESS', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] },
  units: { type: 'string' },
};
const utcTimes = { timeSinceLastSuccessUTC: ts, timeSinceCurrentStatusUTC: ts, updatedUTC: ts };
const objectOf = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});

const param = (name: string, schema: unknown, required: boolean, description?: string) => ({
  name,
  in: 'query',
  required,
  schema,
  ...(description ? { description } : {}),
});
const str = { type: 'string' };
/** sensors/export's startUTC/endUTC: UNIX seconds up to 9999-12-31T23:59:59Z. */
const exportBound = { type: 'number', minimum: 0, maximum: 253402300799 };
const eventParams = [
  param('limit', { type: 'integer', minimum: 1, maximum: 10000, default: 1000 }, false),
  param('startUTC', { type: 'number' }, false, 'UNIX seconds, inclusive, on receivedUTC.'),
  param('endUTC', { type: 'number' }, false, 'UNIX seconds, exclusive, on receivedUTC.'),
  param('eventCategory', { enum: ['Sensors', 'Availability'] }, false),
  param('eventStatus', { enum: ['SUCCESS', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] }, false),
];

const errors = (...codes: string[]) =>
  Object.fromEntries(codes.map((status) => [status, { description: 'Error', content: json(ref('Error')) }]));
const json = (schema: unknown) => ({ 'application/json': { schema } });

/**
 * One read endpoint: GET with query parameters and POST with the same attributes as a JSON body
 * (or a whole-query JSON object), both answering the envelope.
 */
function readEndpoint(
  summary: string,
  params: ReturnType<typeof param>[],
  data: unknown,
  errorCodes: string[],
  moreContent: Record<string, unknown> = {},
) {
  const body = {
    required: params.some((p) => p.required),
    content: json({
      type: 'object',
      required: params.filter((p) => p.required).map((p) => p.name),
      properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
    }),
  };
  const responses = {
    '200': { description: 'Success', content: { ...json(envelope(data)), ...moreContent } },
    ...errors('400', '401', ...errorCodes, '503'),
  };
  return {
    get: { summary, security: [{ bearer: [] }], parameters: params, responses },
    post: { summary, security: [{ bearer: [] }], requestBody: body, responses },
  };
}

const listByDefinition = readEndpoint(
  'Devices connected to one definition',
  [param('definitionName', str, true), param('definitionIsPublic', { type: 'boolean' }, true)],
  arrayOf(ref('Device')),
  ['404'],
);

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'Vigil read API',
    version: '1.0.0',
    description:
      'Devices, data points, history and events of one environment. Every endpoint answers GET and POST; ' +
      'attributes come as a JSON body (any Content-Type), query parameters (arrays as repeated keys or a JSON ' +
      'array string) or one JSON object as the whole query string (`curl -G -d \'{"deviceName":"x"}\'`).',
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'vt_… token' } },
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
        eventStatus: { enum: ['SUCCESS', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] },
        eventCategory: { enum: ['Sensors', 'Availability'] },
        eventMessage: str,
        receivedUTC: { type: 'string', format: 'date-time' },
      }),
      IngestLogEntry: objectOf({
        receivedUTC: { type: 'string', format: 'date-time' },
        ingestId: str,
        gateway: str,
        deviceName: { type: ['string', 'null'] },
        outcome: { enum: ['accepted', 'partial', 'rejected'] },
        code: { type: ['string', 'null'] },
        message: { type: ['string', 'null'] },
      }),
    },
  },
  paths: {
    '/login/{apiKey}': {
      post: {
        summary: 'Log in: a 60-minute bearer token for the API key’s environment',
        parameters: [{ name: 'apiKey', in: 'path', required: true, schema: str }],
        requestBody: {
          required: true,
          content: json(objectOf({ username: str, password: str, totp: str })),
        },
        responses: {
          '200': {
            description: 'Token',
            content: json(
              envelope(objectOf({ token: str, expiresUTC: { type: 'string', format: 'date-time' } })),
            ),
          },
          ...errors('400', '401', '429'),
        },
      },
    },
    '/devices/list': readEndpoint(
      'Every device of the environment, by deviceName',
      [],
      arrayOf(ref('Device')),
      [],
    ),
    '/devices/listByDefinitionName': listByDefinition,
    '/devices/listByDefinitionNames': listByDefinition,
    '/sensors/list': readEndpoint(
      'Data points of one device, in definition order',
      [param('deviceName', str, true)],
      arrayOf(ref('ListedSensor')),
      ['404'],
    ),
    '/sensors/details': readEndpoint(
      'One data point with its last 24 hours',
      [param('deviceName', str, true), param('sensorName', str, true)],
      ref('SensorDetails'),
      ['404'],
    ),
    '/sensors/batchList': readEndpoint(
      'Data points of many devices (at most 1,000), in request order',
      [param('devices', arrayOf(str), true)],
      arrayOf(objectOf({ deviceName: str, sensors: arrayOf(ref('Sensor')) })),
      ['404'],
    ),
    '/sensors/batchDetails': readEndpoint(
      'Details of many data points (at most 1,000), grouped by device in request order',
      [param('sensors', arrayOf(objectOf({ deviceName: str, sensorName: str })), true)],
      arrayOf(objectOf({ deviceName: str, sensors: arrayOf(ref('SensorDetails')) })),
      ['404'],
    ),
    '/sensors/export': readEndpoint(
      'Raw history of one data point, oldest first; one successful export per data point and month',
      [
        param('deviceName', str, true),
        param('sensorName', str, true),
        param('startUTC', exportBound, false, 'UNIX seconds, inclusive; default: the first value.'),
        param('endUTC', exportBound, false, 'UNIX seconds, inclusive; default: now.'),
        param(
          'format',
          { enum: ['json', 'csv'] },
          false,
          "csv (or Accept: text/csv) gives `time,value` lines; text starting with = + - @, tab or CR gets a leading '.",
        ),
      ],
      objectOf({
        deviceName: str,
        sensorName: str,
        sensorType: str,
        units: str,
        startUTC: { type: 'number' },
        endUTC: { type: 'number' },
        values: arrayOf(objectOf({ time: { type: 'string', format: 'date-time' }, value: {} })),
      }),
      ['404', '429'],
      { 'text/csv': { schema: { type: 'string', description: 'time,value lines' } } },
    ),
    '/events/list': readEndpoint(
      'Events of the environment, newest first',
      eventParams,
      arrayOf(ref('Event')),
      [],
    ),
    '/devices/events': readEndpoint(
      'Events of one device, newest first',
      [param('deviceName', str, true), ...eventParams],
      arrayOf(ref('Event')),
      ['404'],
    ),
    '/ingest/log': readEndpoint(
      'Latest ingestion outcomes of the environment, newest first',
      [param('limit', { type: 'integer', minimum: 1, maximum: 1000, default: 1000 }, false)],
      arrayOf(ref('IngestLogEntry')),
      [],
    ),
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
  },
};
