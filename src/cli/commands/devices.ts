import { InvalidArgumentError, type Command } from 'commander';
import { AppError } from '../../errors/app-error.ts';
import type { ManagedDevice } from '../../management/device-shape.ts';
import type {
  SuppressionAnswer,
  ThresholdClearAnswer,
  ThresholdSetAnswer,
} from '../../management/threshold-operations.ts';
import { readFile } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import { isAppError } from '../../errors/app-error.ts';
import type { ImportReport } from '../../management/device-import.ts';
import { collectLabel, leaf, parse, table, withEnv, type Runtime } from '../runtime.ts';

interface EnvOpts {
  env: string;
  json?: boolean;
}
type SensorOpts = EnvOpts & { device: string; sensor: string };

/** A device as `/devices/export` writes it. */
interface ListedDevice {
  deviceName: string;
  displayName: string;
  definitionName: string;
  definitionIsPublic: boolean;
  labels: Record<string, string>;
  availabilityMinutes: number | null;
}

function readExport(csv: string): ListedDevice[] {
  const rows = parseCsv<Record<string, string>>(csv, { columns: true, skip_empty_lines: true });
  return rows.map((r) => ({
    deviceName: r.deviceName ?? '',
    displayName: r.displayName ?? '',
    definitionName: r.definitionName ?? '',
    definitionIsPublic: r.definitionIsPublic === 'true',
    labels: Object.fromEntries(
      (r.labels ?? '')
        .split(';')
        .filter((p) => p.includes('='))
        .map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]),
    ),
    availabilityMinutes: r.availabilityMinutes ? Number(r.availabilityMinutes) : null,
  }));
}

const deviceLine = (d: ListedDevice) => [
  d.deviceName,
  d.displayName,
  `${d.definitionName}${d.definitionIsPublic ? ' (public)' : ''}`,
  d.availabilityMinutes === null ? '-' : String(d.availabilityMinutes),
  Object.entries(d.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(' '),
];

export function addDeviceCommands(program: Command, rt: Runtime): void {
  const device = program.command('device').description('devices');

  withEnv(leaf(device, 'create', 'create a device'))
    .requiredOption('--name <deviceName>', 'device name (what payloads carry as deviceName)')
    .requiredOption('--definition <name>', 'its device definition')
    .option('--public-definition', 'the definition is a public one (default: private to the environment)')
    .option('--display-name <text>', 'display name (default: the device name)')
    .option('--availability-minutes <n>', 'silence before an Availability event', parse.positiveNumber)
    .option('--label <key=value>', 'a label (repeat for more)', collectLabel, {})
    .action(
      async (
        opts: EnvOpts & {
          name: string;
          definition: string;
          publicDefinition?: boolean;
          displayName?: string;
          availabilityMinutes?: number;
          label: Record<string, string>;
        },
      ) => {
        const created = await rt.manage<ManagedDevice>(opts.env, '/devices/create', {
          deviceName: opts.name,
          definitionName: opts.definition,
          definitionIsPublic: opts.publicDefinition === true,
          displayName: opts.displayName,
          availabilityMinutes: opts.availabilityMinutes,
          ...(Object.keys(opts.label).length > 0 ? { labels: opts.label } : {}),
        });
        rt.print(opts.json, created, `created device ${created.deviceName} in ${opts.env}`);
      },
    );

  withEnv(leaf(device, 'list', 'list devices, by name'))
    .option('--label <key=value>', 'only devices with this label (repeat: with every one)', collectLabel, {})
    .action(async (opts: EnvOpts & { label: Record<string, string> }) => {
      const all = readExport(await rt.manage<string>(opts.env, '/devices/export', {}));
      const list = all.filter((d) => Object.entries(opts.label).every(([k, v]) => d.labels[k] === v));
      rt.print(
        opts.json,
        list,
        table(['NAME', 'DISPLAY NAME', 'DEFINITION', 'AVAILABILITY MIN', 'LABELS'], list.map(deviceLine)),
      );
    });

  withEnv(leaf(device, 'import <file>', 'create and update devices from a CSV file (or a JSON array)'))
    .option('--dry-run', 'check and count; write nothing')
    .action(async (file: string, opts: EnvOpts & { dryRun?: boolean }) => {
      const text = await readFile(file, 'utf8');
      const contentType = text.trimStart().startsWith('[') ? 'application/json' : 'text/csv';
      try {
        const r = await rt.manage<ImportReport>(
          opts.env,
          '/devices/import',
          { dryRun: opts.dryRun === true },
          { text, contentType },
        );
        rt.print(
          opts.json,
          r,
          `${r.dryRun ? 'would import' : 'imported'}: ${r.created} created, ${r.updated} updated, ${r.unchanged} unchanged`,
        );
      } catch (err) {
        // The rows at fault, one per line, before the one-line refusal.
        if (isAppError(err) && err.code === 'IMPORT_REJECTED') {
          const failed = (err.details?.failed ?? []) as ImportReport['failed'];
          for (const f of failed)
            rt.note(opts.json, `${file}:${f.line}: ${f.field ?? ''} ${f.code}: ${f.message}`);
        }
        throw err;
      }
    });

  withEnv(leaf(device, 'export', "the environment's devices as the CSV `device import` takes")).action(
    async (opts: EnvOpts) => {
      process.stdout.write(await rt.manage<string>(opts.env, '/devices/export', {}));
    },
  );

  withEnv(leaf(device, 'update', 'change a device'))
    .requiredOption('--name <deviceName>', 'the device')
    .option('--display-name <text>', 'new display name')
    .option('--definition <name>', 'new definition')
    .option('--public-definition', 'the new definition is public')
    .option('--private-definition', 'the new definition is private')
    .option('--availability-minutes <n>', "new availability timeout, or 'inherit'", (v: string) =>
      v === 'inherit' ? null : parse.positiveNumber(v),
    )
    .option(
      '--label <key=value>',
      'the whole label set, a label per option (replaces the device’s)',
      collectLabel,
    )
    .option('--no-labels', 'remove every label')
    .option(
      '--revision <n>',
      'the revision the change is based on (refused when the device has another)',
      parse.positiveInt,
    )
    .action(
      async (
        opts: EnvOpts & {
          name: string;
          displayName?: string;
          definition?: string;
          publicDefinition?: boolean;
          privateDefinition?: boolean;
          availabilityMinutes?: number | null;
          label?: Record<string, string>;
          labels: boolean;
          revision?: number;
        },
      ) => {
        if (opts.publicDefinition && opts.privateDefinition) {
          throw new InvalidArgumentError('give --public-definition or --private-definition, not both');
        }
        const isPublic = opts.publicDefinition ? true : opts.privateDefinition ? false : undefined;
        const updated = await rt.manage<ManagedDevice>(opts.env, '/devices/update', {
          deviceName: opts.name,
          displayName: opts.displayName,
          definitionName: opts.definition,
          definitionIsPublic: isPublic,
          availabilityMinutes: opts.availabilityMinutes,
          labels: opts.labels ? opts.label : {},
          revision: opts.revision,
        });
        rt.print(opts.json, updated, `updated device ${updated.deviceName} (revision ${updated.revision})`);
      },
    );

  withEnv(leaf(device, 'delete', 'delete a device with its state, events and overrides'))
    .requiredOption('--name <deviceName>', 'the device')
    .action(async (opts: EnvOpts & { name: string }) => {
      await rt.manage(opts.env, '/devices/delete', { deviceName: opts.name });
      rt.print(
        opts.json,
        { env: opts.env, deviceName: opts.name, deleted: true },
        `deleted device ${opts.name}`,
      );
    });

  addThresholdCommands(program, rt);
  addSensorCommands(program, rt);
}

const sensorTarget = (cmd: Command) =>
  withEnv(cmd)
    .requiredOption('--device <deviceName>', 'the device')
    .requiredOption('--sensor <name>', 'the data point');

function addThresholdCommands(program: Command, rt: Runtime) {
  const threshold = program.command('threshold').description("device overrides of a data point's thresholds");

  sensorTarget(
    leaf(threshold, 'set', "replace a data point's rules, hysteresis and stale rule for one device"),
  )
    .requiredOption(
      '--rules <json>',
      `rule list or {"rules":[…],"hysteresis":n,"stale":{"after":"30m","status":"WARNING"}}, e.g. '[{"status":"WARNING","above":28},{"status":"CRITICAL","above":30,"for":"10m"}]'`,
    )
    .option(
      '--revision <n>',
      'the revision of the override the change is based on (refused when it has another)',
      parse.positiveInt,
    )
    .action(async (opts: SensorOpts & { rules: string; revision?: number }) => {
      let rules: unknown;
      try {
        rules = JSON.parse(opts.rules);
      } catch {
        throw new AppError('INVALID_INPUT', '--rules is not valid JSON');
      }
      const r = await rt.manage<ThresholdSetAnswer>(opts.env, '/thresholds/set', {
        deviceName: opts.device,
        sensorName: opts.sensor,
        rules,
        revision: opts.revision,
      });
      rt.print(
        opts.json,
        r,
        `thresholds of ${opts.device}/${opts.sensor} ${r.changed ? 'set' : 'unchanged'}: revision ${r.override.revision}`,
      );
    });

  withEnv(leaf(threshold, 'clear', "remove a device override (back to the definition's rules)"))
    .requiredOption('--device <deviceName>', 'the device')
    .option('--sensor <name>', 'the data point (default: every override of the device)')
    .action(async (opts: EnvOpts & { device: string; sensor?: string }) => {
      const r = await rt.manage<ThresholdClearAnswer>(opts.env, '/thresholds/clear', {
        deviceName: opts.device,
        sensorName: opts.sensor,
      });
      rt.print(
        opts.json,
        r,
        r.cleared.length === 0
          ? `no threshold overrides of ${opts.device}${opts.sensor ? `/${opts.sensor}` : ''} to clear`
          : `cleared threshold overrides of ${opts.device}: ${r.cleared.join(', ')}`,
      );
    });
}

function addSensorCommands(program: Command, rt: Runtime) {
  const sensor = program.command('sensor').description('data points of a device');

  sensorTarget(leaf(sensor, 'suppress', 'keep statuses but create no events (maintenance)'))
    .option('--until <iso>', 'end of the suppression (ISO 8601; default: until unsuppressed)')
    .action(async (opts: SensorOpts & { until?: string }) => {
      const untilMs = opts.until === undefined ? 0 : Date.parse(opts.until);
      if (Number.isNaN(untilMs)) throw new InvalidArgumentError('--until: expected an ISO 8601 time');
      const r = await rt.manage<SuppressionAnswer>(opts.env, '/sensors/suppress', {
        deviceName: opts.device,
        sensorName: opts.sensor,
        untilUTC: untilMs === 0 ? undefined : new Date(untilMs).toISOString(),
      });
      rt.print(
        opts.json,
        r,
        `suppressed ${opts.device}/${opts.sensor}${r.untilUTC ? ` until ${r.untilUTC}` : ''}`,
      );
    });

  sensorTarget(leaf(sensor, 'unsuppress', 'create events again')).action(async (opts: SensorOpts) => {
    const r = await rt.manage<SuppressionAnswer>(opts.env, '/sensors/unsuppress', {
      deviceName: opts.device,
      sensorName: opts.sensor,
    });
    rt.print(opts.json, r, `unsuppressed ${opts.device}/${opts.sensor}`);
  });
}
