import { InvalidArgumentError, type Command } from 'commander';
import { parseHeaderOption } from '../../alerting/channel-spec.ts';
import type { RouteView } from '../../alerting/route-admin.ts';
import { formatDurationMs } from '../../lib/duration.ts';
import type { AlertingAdmin } from '../../alerting/alerting-admin.ts';
import type { AuditPage } from '../../audit/audit-log.ts';
import { collectLabel, leaf, parse, table, withEnv, type Runtime } from '../runtime.ts';

interface EnvOpts {
  env: string;
  json?: boolean;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const commaList = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** What an alerting listing answers (the management operation answers the same). */
type Listed<K extends 'listChannels' | 'listRoutes' | 'listFailed' | 'listAttempts'> = Awaited<
  ReturnType<AlertingAdmin[K]>
>;

export function addAlertingCommands(program: Command, rt: Runtime): void {
  addChannelCommands(program, rt);
  addRouteCommands(program, rt);
  addNotifyCommands(program, rt);
  addAuditCommand(program, rt);
}

interface ChannelOpts extends EnvOpts {
  name: string;
  type: string;
  url?: string;
  header?: string[];
  to?: string;
}

/** The attributes of `/channels/create`; options that do not fit the type are usage errors. */
function channelAttributes(opts: ChannelOpts): Record<string, unknown> {
  const { name, type } = opts;
  const extra = (allowed: string[]) => {
    const given = (['url', 'header', 'to'] as const).filter(
      (o) => opts[o] !== undefined && !allowed.includes(o),
    );
    if (given.length > 0)
      throw new InvalidArgumentError(`--${given.join(', --')} does not apply to ${type} channels`);
  };
  const need = (value: string | undefined, option: string) => {
    if (value === undefined) throw new InvalidArgumentError(`${type} channels need ${option}`);
    return value;
  };
  switch (type) {
    case 'webhook': {
      extra(['url', 'header']);
      const headers = (opts.header ?? []).map((h) => {
        const pair = parseHeaderOption(h);
        if (!pair) throw new InvalidArgumentError(`--header ${JSON.stringify(h)}: expected 'Name: value'`);
        return pair;
      });
      return { name, type, url: need(opts.url, '--url <url>'), headers: Object.fromEntries(headers) };
    }
    case 'slack':
      extra(['url']);
      return { name, type, url: need(opts.url, '--url <incoming-webhook-url>') };
    case 'email':
      extra(['to']);
      return { name, type, to: commaList(need(opts.to, '--to <addr>[,<addr>...]')) };
    default:
      throw new InvalidArgumentError('--type must be webhook, slack or email');
  }
}

function addChannelCommands(program: Command, rt: Runtime) {
  const channel = program
    .command('channel')
    .description('where notifications go: webhooks (signed), Slack, email');

  withEnv(leaf(channel, 'create', 'create a channel; a webhook prints its signing secret once'))
    .requiredOption('--name <name>', 'channel name (letters, digits, _ . -)')
    .requiredOption('--type <type>', 'webhook, slack or email')
    .option('--url <url>', 'webhook: the receiver; slack: the incoming-webhook URL')
    .option(
      '--header <header>',
      "webhook: an extra header 'Name: value' (repeatable; stored encrypted)",
      collect,
    )
    .option('--to <addresses>', 'email: recipients, comma-separated')
    .action(async (opts: ChannelOpts) => {
      const created = await rt.manage<{ name: string; type: string; secret?: string }>(
        opts.env,
        '/channels/create',
        channelAttributes(opts),
      );
      rt.print(opts.json, created, [
        ...(created.secret === undefined ? [] : [created.secret]),
        `created ${created.type} channel ${created.name} in ${opts.env}` +
          (created.secret === undefined ? '' : '; the signing secret above is shown only this once.'),
      ]);
    });

  withEnv(leaf(channel, 'list', 'list channels (secrets masked)')).action(async (opts: EnvOpts) => {
    const list = await rt.manage<Listed<'listChannels'>>(opts.env, '/channels/list', {});
    rt.print(
      opts.json,
      list,
      table(
        ['NAME', 'TYPE', 'TARGET', 'HEADERS', 'CREATED'],
        list.map((c) => [c.name, c.type, c.target, (c.headers ?? []).join('; '), c.createdUTC]),
      ),
    );
  });

  withEnv(leaf(channel, 'test', "send a test notification now and print the receiver's answer"))
    .requiredOption('--name <name>', 'the channel')
    .action(async (opts: EnvOpts & { name: string }) => {
      const result = await rt.manage<{ ok: boolean; answer: string; body: string | null; ms: number }>(
        opts.env,
        '/channels/test',
        { name: opts.name },
      );
      rt.print(opts.json, result, [
        `${result.ok ? 'delivered' : 'failed'}: ${result.answer} (${result.ms} ms)`,
        ...(result.body ? [result.body] : []),
      ]);
      if (!result.ok) process.exitCode = 1;
    });

  withEnv(leaf(channel, 'delete', 'delete a channel (refused while a route uses it)'))
    .requiredOption('--name <name>', 'the channel')
    .action(async (opts: EnvOpts & { name: string }) => {
      await rt.manage(opts.env, '/channels/delete', { name: opts.name });
      rt.print(opts.json, { env: opts.env, name: opts.name, deleted: true }, `deleted channel ${opts.name}`);
    });

  withEnv(
    leaf(
      channel,
      'rotate-secret',
      'new webhook signing secret (shown once); the old one signs too for a grace period',
    ),
  )
    .requiredOption('--name <name>', 'the webhook channel')
    .action(async (opts: EnvOpts & { name: string }) => {
      const rotated = await rt.manage<{ name: string; secret: string; previousValidUntilUTC: string }>(
        opts.env,
        '/channels/rotateSecret',
        { name: opts.name },
      );
      rt.print(opts.json, rotated, [
        rotated.secret,
        `new signing secret of ${rotated.name}, shown only this once; webhooks carry signatures with the old secret as well until ${rotated.previousValidUntilUTC}.`,
      ]);
    });
}

interface RouteOpts extends EnvOpts {
  name: string;
  channel: string;
  category?: string;
  minStatus?: string;
  device?: string;
  sensor?: string;
  label: Record<string, string>;
  includeSuccess?: boolean;
  remindEvery?: string;
  quietHours?: string;
  timeZone?: string;
}

/** The attributes of `/routes/create`. */
function routeAttributes(opts: RouteOpts): Record<string, unknown> {
  const { name, category, minStatus, device, sensor, remindEvery, quietHours, timeZone } = opts;
  const optional = { category, minStatus, device, sensor, remindEvery, quietHours, timeZone };
  return {
    name,
    channels: commaList(opts.channel),
    includeSuccess: opts.includeSuccess === true,
    ...(Object.keys(opts.label).length > 0 ? { labels: opts.label } : {}),
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

function addRouteCommands(program: Command, rt: Runtime) {
  const route = program.command('route').description('which events go to which channels');

  withEnv(leaf(route, 'create', 'create a route'))
    .requiredOption('--name <name>', 'route name (letters, digits, _ . -)')
    .requiredOption('--channel <channels>', 'channel name(s), comma-separated')
    .option('--category <category>', 'Sensors or Availability (default: both)')
    .option('--min-status <status>', 'INFO, WARNING, ERROR or CRITICAL: the least status sent (default: all)')
    .option('--device <glob>', 'device names, * and ? as wildcards')
    .option('--sensor <name>', 'one data point (availability for Availability events)')
    .option(
      '--label <key=value>',
      'a label the device must have, e.g. site=amsterdam (repeat for more: all must match)',
      collectLabel,
      {},
    )
    .option('--include-success', 'also send returns to SUCCESS (so a receiver can close its incident)')
    .option('--remind-every <duration>', 'repeat an unacknowledged alarm this often, e.g. 1h')
    .option(
      '--quiet-hours <span>',
      'hold notifications during this local time span, e.g. 22:00-07:00; one digest when it ends',
    )
    .option('--time-zone <zone>', 'IANA time zone of the quiet hours (default UTC)')
    .action(async (opts: RouteOpts) => {
      const created = await rt.manage<RouteView>(opts.env, '/routes/create', routeAttributes(opts));
      rt.print(
        opts.json,
        created,
        `created route ${created.name} → ${created.channels.join(', ')}: ${created.filter}`,
      );
    });

  withEnv(leaf(route, 'list', 'list routes')).action(async (opts: EnvOpts) => {
    const list = await rt.manage<Listed<'listRoutes'>>(opts.env, '/routes/list', {});
    rt.print(
      opts.json,
      list,
      table(
        ['NAME', 'CHANNELS', 'FILTER', 'REMIND', 'QUIET HOURS'],
        list.map((r) => [
          r.name,
          r.channels.join(','),
          r.filter,
          r.remindEvery === null ? '-' : formatDurationMs(r.remindEvery),
          r.quietHours ?? '-',
        ]),
      ),
    );
  });

  withEnv(leaf(route, 'delete', 'delete a route'))
    .requiredOption('--name <name>', 'the route')
    .action(async (opts: EnvOpts & { name: string }) => {
      await rt.manage(opts.env, '/routes/delete', { name: opts.name });
      rt.print(opts.json, { env: opts.env, name: opts.name, deleted: true }, `deleted route ${opts.name}`);
    });
}

function addNotifyCommands(program: Command, rt: Runtime) {
  const notify = program
    .command('notify')
    .description('notification delivery: failures, retries, the attempt log');

  withEnv(leaf(notify, 'failed', "failed notifications with the receiver's last answer")).action(
    async (opts: EnvOpts) => {
      const list = await rt.manage<Listed<'listFailed'>>(opts.env, '/notifications/failed', {});
      rt.print(
        opts.json,
        list,
        table(
          ['ID', 'KIND', 'CHANNEL', 'DEVICE/SENSOR', 'FAILED', 'ATTEMPTS', 'LAST ANSWER'],
          list.map((f) => [
            f.id,
            f.kind,
            f.channel,
            f.deviceName === null ? '-' : `${f.deviceName}/${f.sensorName ?? ''}`,
            f.failedUTC ?? '',
            String(f.attempts),
            f.lastAnswer,
          ]),
        ),
      );
    },
  );

  withEnv(
    leaf(notify, 'retry [ids...]', 'send failed notifications again (all of the environment without ids)'),
  ).action(async (ids: string[], opts: EnvOpts) => {
    const { retried } = await rt.manage<{ retried: string[] }>(opts.env, '/notifications/retry', { ids });
    rt.print(opts.json, { env: opts.env, retried }, `${retried.length} notification(s) queued again`);
  });

  withEnv(leaf(notify, 'log', 'delivery attempts, newest first'))
    .option('--limit <n>', 'most attempts shown', parse.positiveInt, 50)
    .action(async (opts: EnvOpts & { limit: number }) => {
      const list = await rt.manage<Listed<'listAttempts'>>(opts.env, '/notifications/log', {
        limit: opts.limit,
      });
      rt.print(
        opts.json,
        list,
        table(
          ['TIME', 'CHANNEL', 'KIND', 'DEVICE/SENSOR', 'ATTEMPT', 'OUTCOME', 'ANSWER', 'MS'],
          list.map((a) => [
            a.timeUTC,
            a.channel,
            a.kind,
            a.deviceName === null ? '-' : `${a.deviceName}/${a.sensorName ?? ''}`,
            String(a.attempt),
            a.outcome,
            a.answer,
            String(a.ms),
          ]),
        ),
      );
    });
}

/** An audit entry's details in one line: `status=WARNING note="on it"`. */
const detailsText = (details: Record<string, unknown>) =>
  Object.entries(details)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"]/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ');

function addAuditCommand(program: Command, rt: Runtime) {
  withEnv(leaf(program, 'audit', 'who changed what (and acknowledged which alarm), newest first'))
    .option('--limit <n>', 'most entries shown', parse.positiveInt, 50)
    .option('--actor <who>', 'only changes by this user, token:<name> or cli:<user>')
    .option('--action <action>', 'only this action (device.update) or resource (device)')
    .option('--target <what>', 'only changes of this device, definition, user, …')
    .option('--before <cursor>', 'the page after the one that printed this cursor')
    .action(
      async (
        opts: EnvOpts & { limit: number; actor?: string; action?: string; target?: string; before?: string },
      ) => {
        const { entries, next } = await rt.manage<AuditPage>(opts.env, '/audit/list', {
          limit: opts.limit,
          actor: opts.actor,
          action: opts.action,
          target: opts.target,
          before: opts.before,
        });
        rt.print(
          opts.json,
          { entries, next },
          table(
            ['TIME', 'WHO', 'ACTION', 'TARGET', 'DETAILS'],
            entries.map((e) => [e.atUTC, e.actor, e.action, e.target, detailsText(e.details)]),
          ),
        );
        if (next !== null) rt.note(opts.json, `older: vigil audit --env ${opts.env} --before ${next}`);
      },
    );
}
