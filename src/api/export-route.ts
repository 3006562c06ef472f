/**
 * sensors/export (docs/interface.md#sensors-export): one data point's raw history over
 * [startUTC, endUTC], oldest first, streamed as JSON (the usual envelope) or CSV (`time,value`) with
 * bounded memory. At most VIGIL_EXPORT_LIMIT_PER_MONTH successful exports per environment and data
 * point per calendar month (UTC); only a completed export is counted, so a failed one costs nothing.
 */
import { finished } from 'node:stream/promises';
import type { ServerResponse } from 'node:http';
import { DATA_TYPE_INFO } from '../domain/data-types.ts';
import type { DataValue } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { exportValues, type ExportedValue } from '../history/export-values.ts';
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
  const quota = createExportQuota(deps);
  return [
    apiRoute({
      paths: ['/sensors/export'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: exportAttributes,
      async handle({ env, attrs, nowMs, req, res }) {
        const { deviceName, sensorName, startUTC, endUTC } = attrs;
        const csv = wantsCsv(attrs.format, req.headers.accept);
        const device = await deps.tenancy.getDevice(env, deviceName);
        if (!device) throw deviceNotFound(deviceName);
        const definition = await deps.tenancy.getDefinition(
          env,
          device.definitionName,
          device.definitionIsPublic,
        );
        const dp = definition?.spec.dataPoints.find((p) => p.name === sensorName);
        if (!dp)
          throw new AppError('SENSOR_NOT_FOUND', `No data point ${sensorName} on device ${deviceName}.`, {
            details: { deviceName, sensorName },
          });
        const item = `${deviceName}|${sensorName}`;
        await quota.check(env, item, nowMs);

        const endSeconds = endUTC ?? Math.floor(nowMs / 1000);
        const values = exportValues(deps.influx, {
          env,
          device: deviceName,
          sensor: sensorName,
          dataType: dp.dataType,
          startMs: startUTC === undefined ? undefined : startUTC * 1000,
          endMs: endUTC === undefined ? nowMs : endUTC * 1000,
        });
        // The first page is read before anything is sent: a history outage is still a clean 503.
        const first = await values.next();
        const info = DATA_TYPE_INFO[dp.dataType];
        const head = {
          deviceName,
          sensorName,
          sensorType: info.sensorType,
          units: info.units,
          startUTC: startUTC ?? 0,
          endUTC: endSeconds,
        };
        try {
          const format = csv ? csvFormat() : jsonFormat(head);
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
        } catch (err) {
          await values.return(undefined);
          // Nothing sent yet (the first 64 KiB are buffered): the client still gets a proper error.
          if (!res.headersSent) throw err;
          deps.log.warn({ err, env, device: deviceName, sensor: sensorName }, 'export did not complete');
          res.destroy();
          return STREAMED;
        }
        await quota.record(env, item, nowMs);
        return STREAMED;
      },
    }),
  ];
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

/** The monthly export allowance, counted in `Keys.exports(env, 'YYYY-MM')` (field `device|sensor`). */
function createExportQuota(deps: ApiDeps) {
  const limit = deps.config.exportLimitPerMonth;
  const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);
  return {
    async check(env: string, item: string, nowMs: number) {
      if (limit === 0) return;
      const used = Number((await deps.redis.hget(deps.keys.exports(env, monthOf(nowMs)), item)) ?? 0);
      if (used < limit) return;
      const now = new Date(nowMs);
      const nextMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
      const nextAllowedUTC = new Date(nextMs).toISOString();
      throw new AppError(
        'EXPORT_LIMIT_REACHED',
        `The export allowance of this data point for this month is used; next export allowed from ${nextAllowedUTC}.`,
        { retryAfterSeconds: Math.ceil((nextMs - nowMs) / 1000), details: { nextAllowedUTC } },
      );
    },
    async record(env: string, item: string, nowMs: number) {
      if (limit === 0) return;
      const key = deps.keys.exports(env, monthOf(nowMs));
      // Kept a little beyond the month it counts.
      await deps.redis
        .multi()
        .hincrby(key, item, 1)
        .expire(key, 40 * 24 * 3600)
        .exec();
    },
  };
}
