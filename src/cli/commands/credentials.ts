import { InvalidArgumentError, type Command } from 'commander';
import QRCode from 'qrcode';
import { checkRole, checkScopes, MAX_ROTATION_OVERLAP_MS } from '../../tenancy/admin-credentials.ts';
import type { PublicApiKey, PublicToken } from '../../tenancy/admin-credentials.ts';
import type { PublicUser } from '../../tenancy/admin-users.ts';
import { isAppError } from '../../errors/app-error.ts';
import { collectLabel, leaf, parse, parseExpiry, table, withEnv, type Runtime } from '../runtime.ts';
import { blockLines } from '../terminal-text.ts';
import type { AutoCreateRule, Scope, UserRole } from '../../tenancy/types.ts';

interface PasswordOpts {
  password?: string;
  passwordStdin?: boolean;
}

/** The password of --password or the first line of stdin (--password-stdin); exactly one. */
async function passwordFrom(opts: PasswordOpts): Promise<string> {
  if ((opts.password === undefined) === (opts.passwordStdin !== true)) {
    throw new InvalidArgumentError('give exactly one of --password <password> or --password-stdin');
  }
  if (opts.password !== undefined) return opts.password;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

interface EnvOpts {
  env: string;
  json?: boolean;
}

/** A commander parser from an admin check: its refusal becomes a usage error (exit 2). */
const usage =
  <T>(check: (value: string) => T) =>
  (value: string): T => {
    try {
      return check(value);
    } catch (err) {
      if (isAppError(err)) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
const scopeList = usage((value) => checkScopes(value.split(',').map((s) => s.trim())));
const role = usage(checkRole);

const OVERLAP_UNITS_MINUTES: Record<string, number> = { s: 1 / 60, m: 1, h: 60, d: 1440 };

/** `--overlap`: 0, or a duration (90s, 60m, 12h, 7d) of at most 30 days, in minutes. */
export function overlapMinutes(value: string): number {
  if (value === '0') return 0;
  const d = /^(\d+(?:\.\d+)?)([smhd])$/.exec(value);
  const minutes = d ? Number(d[1]) * (OVERLAP_UNITS_MINUTES[d[2] ?? 'm'] ?? 1) : NaN;
  if (!Number.isFinite(minutes) || minutes * 60_000 > MAX_ROTATION_OVERLAP_MS)
    throw new InvalidArgumentError('expected 0 or a duration of at most 30 days, such as 60m, 12h or 7d');
  return minutes;
}

/** The options of an auto-create rule, as `apikey create` and `apikey update` take them. */
interface AutoCreateOpts {
  autoCreate?: string;
  autoCreatePublic?: boolean;
  autoCreateLabel: Record<string, string>;
  autoCreateMax?: number;
}

const withAutoCreate = (cmd: Command) =>
  cmd
    .option(
      '--auto-create <definition>',
      'let the key create the devices it does not know (LoRaWAN uplinks), of this definition',
    )
    .option('--auto-create-public', 'the definition is a public one')
    .option(
      '--auto-create-label <key=value>',
      'a label of each device created (repeat for more)',
      collectLabel,
      {},
    )
    .option('--auto-create-max <n>', 'most devices the key creates (1..100000)', parse.positiveInt);

/** The rule the options give; undefined when they give none (INVALID_ARGUMENT for half a rule). */
function ruleOf(opts: AutoCreateOpts): AutoCreateRule | undefined {
  const partial =
    opts.autoCreatePublic === true ||
    Object.keys(opts.autoCreateLabel).length > 0 ||
    opts.autoCreateMax !== undefined;
  if (opts.autoCreate === undefined) {
    if (partial)
      throw new InvalidArgumentError('give --auto-create <definition> with the other --auto-create options');
    return undefined;
  }
  if (opts.autoCreateMax === undefined)
    throw new InvalidArgumentError('give --auto-create-max <n> with --auto-create');
  return {
    definitionName: opts.autoCreate,
    definitionIsPublic: opts.autoCreatePublic === true,
    labels: opts.autoCreateLabel,
    maxDevices: opts.autoCreateMax,
  };
}

/** A rule in one cell: `Freezer (public) ×500 site=dock`, or `-`. */
const ruleText = (k: PublicApiKey): string =>
  k.autoCreate === null
    ? '-'
    : [
        `${k.autoCreate.definitionName}${k.autoCreate.definitionIsPublic ? ' (public)' : ''}`,
        `max ${k.autoCreate.maxDevices}`,
        ...Object.entries(k.autoCreate.labels).map(([key, v]) => `${key}=${v}`),
      ].join(' ');

interface RotatedKey {
  id: string;
  name: string;
  createdUTC: string;
  key: string;
  previous: { id: string; name: string; expiresUTC: string };
}

export function addCredentialCommands(program: Command, rt: Runtime): void {
  addApiKeyCommands(program, rt);
  addTokenCommands(program, rt);
  addUserCommands(program, rt);
}

function addApiKeyCommands(program: Command, rt: Runtime) {
  const apikey = program
    .command('apikey')
    .description('API keys for the gateway (HTTP path segment or MQTT password)');

  withAutoCreate(withEnv(leaf(apikey, 'create', 'create an API key (shown once)')))
    .option('--name <name>', 'a name to find the key by later')
    .action(async (opts: EnvOpts & AutoCreateOpts & { name?: string }) => {
      const autoCreate = ruleOf(opts);
      const created = await rt.manage<{ id: string; name: string; createdUTC: string; key: string }>(
        opts.env,
        '/apikeys/create',
        { name: opts.name, ...(autoCreate ? { autoCreate } : {}) },
      );
      rt.print(opts.json, { env: opts.env, ...created }, [
        created.key,
        `API key ${created.id} (${created.name}) for ${opts.env}; it is shown only this once.`,
      ]);
    });

  withEnv(leaf(apikey, 'list', 'list API keys (ids and names; never the keys)')).action(
    async (opts: EnvOpts) => {
      const list = await rt.manage<PublicApiKey[]>(opts.env, '/apikeys/list', {});
      rt.print(
        opts.json,
        list,
        table(
          ['ID', 'NAME', 'CREATED', 'EXPIRES', 'AUTO-CREATE', 'DEVICES CREATED'],
          list.map((k) => [
            k.id,
            k.name,
            k.createdUTC,
            k.expiresUTC ?? 'never',
            ruleText(k),
            String(k.devicesCreated),
          ]),
        ),
      );
    },
  );

  withAutoCreate(
    withEnv(
      leaf(
        apikey,
        'update <idOrName>',
        "set, change (--auto-create …) or clear (--no-auto-create) a key's auto-create rule",
      ),
    ),
  )
    .option('--no-auto-create', 'the key creates no more devices')
    .option(
      '--revision <n>',
      'the revision the change is based on (refused when the key has another)',
      parse.positiveInt,
    )
    .action(
      async (
        idOrName: string,
        opts: EnvOpts &
          Omit<AutoCreateOpts, 'autoCreate'> & { autoCreate?: string | false; revision?: number },
      ) => {
        const clear = opts.autoCreate === false;
        const rule = clear ? undefined : ruleOf({ ...opts, autoCreate: opts.autoCreate || undefined });
        if (!clear && rule === undefined)
          throw new InvalidArgumentError(
            'give --auto-create <definition> --auto-create-max <n>, or --no-auto-create',
          );
        const updated = await rt.manage<PublicApiKey>(opts.env, '/apikeys/update', {
          id: idOrName,
          autoCreate: rule ?? null,
          revision: opts.revision,
        });
        rt.print(
          opts.json,
          updated,
          `API key ${updated.id} (${updated.name}): auto-create ${ruleText(updated)} (revision ${updated.revision})`,
        );
      },
    );

  withEnv(leaf(apikey, 'revoke <idOrName>', 'revoke an API key at once')).action(
    async (idOrName: string, opts: EnvOpts) => {
      const revoked = await rt.manage<{ id: string; name: string }>(opts.env, '/apikeys/revoke', {
        id: idOrName,
      });
      rt.print(opts.json, revoked, `revoked API key ${revoked.id} (${revoked.name})`);
    },
  );

  withEnv(
    leaf(
      apikey,
      'rotate <idOrName>',
      'replace an API key: a new key (shown once), the old one working for the overlap more',
    ),
  )
    .requiredOption(
      '--overlap <duration>',
      'how long the old key keeps working: 0 (revoked at once) or up to 30d (60m, 12h, 7d)',
      overlapMinutes,
    )
    .option('--name <name>', "the new key's name (default: the old name with -r2, -r3…)")
    .action(async (idOrName: string, opts: EnvOpts & { overlap: number; name?: string }) => {
      const rotated = await rt.manage<RotatedKey>(opts.env, '/apikeys/rotate', {
        id: idOrName,
        overlapMinutes: opts.overlap,
        name: opts.name,
      });
      rt.print(opts.json, { env: opts.env, ...rotated }, [
        rotated.key,
        `API key ${rotated.id} (${rotated.name}) for ${opts.env}; it is shown only this once.`,
        `The old key ${rotated.previous.id} (${rotated.previous.name}) stops working at ${rotated.previous.expiresUTC}.`,
      ]);
    });
}

function addTokenCommands(program: Command, rt: Runtime) {
  const token = program.command('token').description('long-lived bearer tokens for the read API');

  withEnv(leaf(token, 'create', 'create a bearer token (shown once)'))
    .option('--name <name>', 'a name to find the token by later')
    .option('--expires <when>', 'expiry: a duration (30d, 12h, 90m), an ISO time, or never', 'never')
    .option(
      '--scope <scopes>',
      'read; read,write to also acknowledge alarms; read,write,admin to also manage (the management API)',
      scopeList,
      ['read'],
    )
    .action(async (opts: EnvOpts & { name?: string; expires: string; scope: Scope[] }) => {
      const expiresMs = parseExpiry(opts.expires, Date.now());
      const created = await rt.manage<Omit<PublicToken, 'lastUsedUTC'> & { token: string }>(
        opts.env,
        '/tokens/create',
        {
          name: opts.name,
          scopes: opts.scope,
          expiresUTC: expiresMs === 0 ? undefined : new Date(expiresMs).toISOString(),
        },
      );
      rt.print(opts.json, { env: opts.env, ...created }, [
        created.token,
        `token ${created.id} (${created.name}) for ${opts.env}, scope ${created.scopes.join(',')}, expires ${created.expiresUTC ?? 'never'}; it is shown only this once.`,
      ]);
    });

  withEnv(leaf(token, 'list', 'list CLI tokens with their last use (login tokens are not listed)')).action(
    async (opts: EnvOpts) => {
      const list = await rt.manage<PublicToken[]>(opts.env, '/tokens/list', {});
      rt.print(
        opts.json,
        list,
        table(
          ['ID', 'NAME', 'SCOPE', 'CREATED', 'EXPIRES', 'LAST USED'],
          list.map((t) => [
            t.id,
            t.name,
            t.scopes.join(','),
            t.createdUTC,
            t.expiresUTC ?? 'never',
            t.lastUsedUTC ?? 'never',
          ]),
        ),
      );
    },
  );

  withEnv(leaf(token, 'revoke <idOrName>', 'revoke a token at once')).action(
    async (idOrName: string, opts: EnvOpts) => {
      const revoked = await rt.manage<{ id: string; name: string }>(opts.env, '/tokens/revoke', {
        id: idOrName,
      });
      rt.print(opts.json, revoked, `revoked token ${revoked.id} (${revoked.name})`);
    },
  );
}

function addUserCommands(program: Command, rt: Runtime) {
  const user = program.command('user').description('users who log in to the read API');
  type UserOpts = EnvOpts & { username: string };
  const revisionOption = (cmd: Command) =>
    cmd.option(
      '--revision <n>',
      'the revision the change is based on (refused when the user has another)',
      parse.positiveInt,
    );

  withEnv(leaf(user, 'create', 'create a user'))
    .requiredOption('--username <username>', 'unique within the environment')
    .option('--password <password>', '8-1024 characters (stored as a scrypt hash)')
    .option(
      '--password-stdin',
      'read the password from the first line of stdin (keeps it out of shell history)',
    )
    .option(
      '--role <role>',
      'admin (manages the environment), operator (reads, acknowledges alarms) or viewer (reads only)',
      role,
      'operator',
    )
    .action(async (opts: UserOpts & PasswordOpts & { role: UserRole }) => {
      const password = await passwordFrom(opts);
      const created = await rt.manage<PublicUser>(opts.env, '/users/create', {
        username: opts.username,
        password,
        role: opts.role,
      });
      rt.print(
        opts.json,
        { env: opts.env, ...created },
        `created ${created.role} ${opts.username} in ${opts.env}`,
      );
    });

  withEnv(leaf(user, 'list', 'list users')).action(async (opts: EnvOpts) => {
    const list = await rt.manage<PublicUser[]>(opts.env, '/users/list', {});
    rt.print(
      opts.json,
      list,
      table(
        ['USERNAME', 'ROLE', 'MFA', 'STATUS', 'CREATED', 'REVISION'],
        list.map((u) => [
          u.username,
          u.role,
          u.mfaEnabled ? 'on' : 'off',
          u.disabled ? 'disabled' : 'enabled',
          u.createdUTC,
          String(u.revision),
        ]),
      ),
    );
  });

  revisionOption(withEnv(leaf(user, 'role', "change a user's role (their login tokens follow at once)")))
    .requiredOption('--username <username>', 'the user')
    .requiredOption('--role <role>', 'admin, operator or viewer', role)
    .action(async (opts: UserOpts & { role: UserRole; revision?: number }) => {
      const changed = await rt.manage<PublicUser>(opts.env, '/users/role', {
        username: opts.username,
        role: opts.role,
        revision: opts.revision,
      });
      rt.print(opts.json, { env: opts.env, ...changed }, `${opts.username} is now ${changed.role}`);
    });

  revisionOption(
    withEnv(
      leaf(user, 'disable', 'stop a user from signing in; their sessions and login tokens end at once'),
    ),
  )
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts & { revision?: number }) => {
      const changed = await rt.manage<PublicUser>(opts.env, '/users/disable', {
        username: opts.username,
        revision: opts.revision,
      });
      rt.print(opts.json, { env: opts.env, ...changed }, `${opts.username} is disabled`);
    });

  revisionOption(withEnv(leaf(user, 'enable', 'let a disabled user sign in again')))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts & { revision?: number }) => {
      const changed = await rt.manage<PublicUser>(opts.env, '/users/enable', {
        username: opts.username,
        revision: opts.revision,
      });
      rt.print(opts.json, { env: opts.env, ...changed }, `${opts.username} is enabled`);
    });

  withEnv(leaf(user, 'delete', 'delete a user (their login tokens stop working)'))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts) => {
      await rt.manage(opts.env, '/users/delete', { username: opts.username });
      rt.print(
        opts.json,
        { env: opts.env, username: opts.username, deleted: true },
        `deleted user ${opts.username}`,
      );
    });

  withEnv(leaf(user, 'password', 'set a new password'))
    .requiredOption('--username <username>', 'the user')
    .option('--password <password>', 'the new password')
    .option('--password-stdin', 'read the password from the first line of stdin')
    .action(async (opts: UserOpts & PasswordOpts) => {
      const password = await passwordFrom(opts);
      await rt.manage(opts.env, '/users/password', { username: opts.username, password });
      rt.print(opts.json, { env: opts.env, username: opts.username }, `password of ${opts.username} changed`);
    });

  const mfa = user.command('mfa').description('TOTP second factor (RFC 6238, 6 digits, 30 s)');
  withEnv(leaf(mfa, 'enable', 'turn on TOTP; prints the otpauth URI and a QR code once'))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts) => {
      const { otpauthUri: uri } = await rt.manage<{ otpauthUri: string }>(opts.env, '/users/enableMfa', {
        username: opts.username,
      });
      const secret = new URL(uri).searchParams.get('secret') ?? '';
      const qr = opts.json ? '' : await QRCode.toString(uri, { type: 'utf8' });
      rt.print(opts.json, { env: opts.env, username: opts.username, otpauthUri: uri, secret }, [
        `MFA enabled for ${opts.username}. Scan this with an authenticator app (shown only now):`,
        ...blockLines(qr.trimEnd()),
        uri,
      ]);
    });
  withEnv(leaf(mfa, 'disable', 'turn off TOTP'))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts) => {
      await rt.manage(opts.env, '/users/resetMfa', { username: opts.username });
      rt.print(
        opts.json,
        { env: opts.env, username: opts.username, mfaEnabled: false },
        `MFA disabled for ${opts.username}`,
      );
    });
}
