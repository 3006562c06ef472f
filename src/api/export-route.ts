/**
 * sensors/export (docs/interface.md#sensors-export): one data point's raw history over
 * [startUTC, endUTC], oldest first, streamed as JSON (the usual envelope) or CSV (`time,value`) with
 * bounded memory. Each export takes its place in the monthly allowance (export-allowance.ts) before
 * it streams, and gives it back when it does not complete (InfluxDB failing, the client gone), so
 * a failed export costs nothing; refused input is refused before the allowance is looked at.
 */
import { finished } from 'node:stream/promises';
import type { ServerResponse } from 'node:http';
import type { z } from 'zod';
import { DATA_TYPE_INFO } from '../domain/data-types.ts';
import type { DataType, DataValue } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { exportValues, type ExportedValue } from '../history/export-values.ts';
import { createExportAllowance } from './export-allowance.ts';
import { apiRoute, STREAMED, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';
import { deviceNotFound } from './devices-routes.ts';

/** 9999-12-31T23:59:59Z, the latest bound accepted (in seconds). */
export const MAX_EXPORT_UTC = 253_402_300_799;

/** Bytes collected before a write to the socket. */
const CHUNK_CHARS = 64 * 1024;

const exportAttributes = attributes({
  deviceName: attr.string(),
  sensorName: attr.string(),
  startUTC: attr
    .number({ min: 0, max: MAX_EXPORT_UTC })
    .optional()
    .describe('UNIX seconds, inclusive; default: the first value.'),
  endUTC: attr
    .number({ min: 0, max: MAX_EXPORT_UTC })
    .optional()
    .describe('UNIX seconds, inclusive, not before startUTC; default: now.'),
  format: attr
    .oneOf(['json', 'csv'])
    .optional()
    .describe(
      "csv (or Accept: text/csv) gives `time,value` lines; text starting with = + - @, tab or CR gets a leading '.",
    ),
}).refine((a) => a.startUTC === undefined || a.endUTC === undefined || a.endUTC >= a.startUTC, {
  path: ['endUTC'],
  error: 'no earlier than startUTC',
});

export function exportRoutes(deps: ApiDeps): ApiRoute[] {
  const allowance = createExportAllowance({
    redis: deps.redis,
    keys: deps.keys,
    limitPerMonth: deps.config.exportLimitPerMonth,
  });
  return [
    apiRoute({
      paths: ['/sensors/export'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: exportAttributes,
      async handle({ env, attrs, nowMs, req, res }) {
        const { deviceName, sensorName } = attrs;
        const dataType = await dataTypeOf(deps, env, deviceName, sensorName);
        const reservation = await allowance.reserve(env, `${deviceName}|${sensorName}`, nowMs);
        try {
          await sendExport(deps, res, {
            env,
            attrs,
            dataType,
            nowMs,
            csv: wantsCsv(attrs.format, req.headers.accept),
          });
        } catch (err) {
          // Not completed: the export did not use the allowance.
          await reservation
            .release()
            .catch((releaseErr: unknown) =>
              deps.log.warn({ err: releaseErr, env }, 'export allowance not given back'),
            );
          // Nothing sent yet (the first 64 KiB are buffered): the client still gets a proper error.
          if (!res.headersSent) throw err;
          deps.log.warn({ err, env, device: deviceName, sensor: sensorName }, 'export did not complete');
          res.destroy();
        }
        return STREAMED;
      },
    }),
  ];
}

type ExportAttributes = z.infer<typeof exportAttributes>;

/** The data point's type; DEVICE_NOT_FOUND / SENSOR_NOT_FOUND when the environment has no such thing. */
async function dataTypeOf(
  deps: ApiDeps,
  env: string,
  deviceName: string,
  sensorName: string,
): Promise<DataType> {
  const device = await deps.tenancy.getDevice(env, deviceName);
  if (!device) throw deviceNotFound(deviceName);
  const definition = await deps.tenancy.getDefinition(env, device.definitionName, device.definitionIsPublic);
  const dp = definition?.spec.dataPoints.find((p) => p.name === sensorName);
  if (!dp)
    throw new AppError('SENSOR_NOT_FOUND', `No data point ${sensorName} on device ${deviceName}.`, {
      details: { deviceName, sensorName },
    });
  return dp.dataType;
}

/** Streams the export into `res`; resolves once all of it went out, throws when it did not. */
async function sendExport(
  deps: ApiDeps,
  res: ServerResponse,
  o: { env: string; attrs: ExportAttributes; dataType: DataType; nowMs: number; csv: boolean },
): Promise<void> {
  const { deviceName, sensorName, startUTC, endUTC } = o.attrs;
  const values = exportValues(deps.influx, {
    env: o.env,
    device: deviceName,
    sensor: sensorName,
    dataType: o.dataType,
    startMs: startUTC === undefined ? undefined : startUTC * 1000,
    endMs: endUTC === undefined ? o.nowMs : endUTC * 1000,
  });
  try {
    // The first page is read before anything is sent: a history outage is still a clean 503.
    const first = await values.next();
    const info = DATA_TYPE_INFO[o.dataType];
    const format = o.csv
      ? csvFormat()
      : jsonFormat({
          deviceName,
          sensorName,
          sensorType: info.sensorType,
          units: info.units,
          startUTC: startUTC ?? 0,
          endUTC: endUTC ?? Math.floor(o.nowMs / 1000),
        });
    res.statusCode = 200;
    res.setHeader('Content-Type', format.contentType);
    const out = createChunkWriter(res);
    await out.push(format.open);
    let n = 0;
    for (let next = first; next.done !== true; next = await values.next()) {
      await out.push(format.value(next.value, n++));
    }
    await out.push(format.close);
    await out.end();
  } finally {
    await values.return(undefined);
  }
}

/** CSV when `format` says so, or when it is absent and the client accepts text/csv. */
const wantsCsv = (format: 'json' | 'csv' | undefined, accept: string | undefined): boolean =>
  format === undefined ? /\btext\/csv\b/i.test(accept ?? '') : format === 'csv';

interface Format {
  contentType: string;
  open: string;
  value(v: ExportedValue, index: number): string;
  close: string;
}

function jsonFormat(head: Record<string, unknown>): Format {
  const envelope = JSON.stringify({ status: 'success', data: { ...head, values: [] } });
  return {
    contentType: 'application/json; charset=utf-8',
    open: envelope.slice(0, -3), // up to and including `"values":[`
    value: (v, i) =>
      `${i === 0 ? '' : ','}{"time":"${new Date(v.timeMs).toISOString()}","value":${JSON.stringify(v.value)}}`,
    close: ']}}',
  };
}

function csvFormat(): Format {
  return {
    contentType: 'text/csv; charset=utf-8',
    open: 'time,value\n',
    value: (v) => `${new Date(v.timeMs).toISOString()},${csvCell(v.value)}\n`,
    close: '',
  };
}

/**
 * One CSV cell (RFC 4180 quoting); a GPS value becomes `"lat,lon"`. Text a spreadsheet would read as
 * a formula (starting with = + - @, or tab or CR, which some strip before looking) gets a leading
 * `'`, so opening an export never runs what a device sent. Numbers (-3.5) stay as they are.
 */
export function csvCell(value: DataValue): string {
  const text =
    typeof value === 'object'
      ? `${value.lat},${value.lon}`
      : typeof value === 'string' && FORMULA_START.test(value)
        ? `'${value}`
        : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const FORMULA_START = /^[=+\-@\t\r]/;

/** Buffers small pieces into larger socket writes and waits for the client when it is slow. */
function createChunkWriter(res: ServerResponse) {
  let buffer = '';
  const flush = async () => {
    if (buffer === '') return;
    if (res.destroyed) throw new Error('client went away');
    const ok = res.write(buffer);
    buffer = '';
    if (!ok) await drained(res);
  };
  return {
    async push(text: string) {
      buffer += text;
      if (buffer.length >= CHUNK_CHARS) await flush();
    },
    async end() {
      await flush();
      res.end();
      await finished(res);
    },
  };
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('client went away'));
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}
