import { InvalidArgumentError, type Command } from 'commander';
import QRCode from 'qrcode';
import { checkRole, checkScopes } from '../../tenancy/admin-credentials.ts';
import { isAppError } from '../../errors/app-error.ts';
import { leaf, parseExpiry, table, withEnv, type Runtime } from '../runtime.ts';
import { blockLines } from '../terminal-text.ts';
import type { Scope, UserRole } from '../../tenancy/types.ts';

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

export function addCredentialCommands(program: Command, rt: Runtime): void {
  addApiKeyCommands(program, rt);
  addTokenCommands(program, rt);
  addUserCommands(program, rt);
}

function addApiKeyCommands(program: Command, rt: Runtime) {
  const apikey = program
    .command('apikey')
    .description('API keys for the gateway (HTTP path segment or MQTT password)');

  withEnv(leaf(apikey, 'create', 'create an API key (shown once)'))
    .option('--name <name>', 'a name to find the key by later')
    .action(async (opts: EnvOpts & { name?: string }) => {
      const { admin } = await rt.services();
      const created = await admin.createApiKey(opts.env, opts.name);
      rt.print(opts.json, { env: opts.env, ...created }, [
        created.key,
        `API key ${created.id} (${created.name}) for ${opts.env}; it is shown only this once.`,
      ]);
    });

  withEnv(leaf(apikey, 'list', 'list API keys (ids and names; never the keys)')).action(
    async (opts: EnvOpts) => {
      const { admin } = await rt.services();
      const list = await admin.listApiKeys(opts.env);
      rt.print(
        opts.json,
        list,
        table(
          ['ID', 'NAME', 'CREATED'],
          list.map((k) => [k.id, k.name, k.createdUTC]),
        ),
      );
    },
  );

  withEnv(leaf(apikey, 'revoke <idOrName>', 'revoke an API key at once')).action(
    async (idOrName: string, opts: EnvOpts) => {
      const { admin } = await rt.services();
      const revoked = await admin.revokeApiKey(opts.env, idOrName);
      rt.print(opts.json, revoked, `revoked API key ${revoked.id} (${revoked.name})`);
    },
  );
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
      const { admin } = await rt.services();
      const expiresMs = parseExpiry(opts.expires, Date.now());
      const created = await admin.createToken(opts.env, opts.name, expiresMs, opts.scope);
      rt.print(opts.json, { env: opts.env, ...created }, [
        created.token,
        `token ${created.id} (${created.name}) for ${opts.env}, scope ${created.scopes.join(',')}, expires ${created.expiresUTC ?? 'never'}; it is shown only this once.`,
      ]);
    });

  withEnv(leaf(token, 'list', 'list CLI tokens (login tokens are not listed)')).action(
    async (opts: EnvOpts) => {
      const { admin } = await rt.services();
      const list = await admin.listTokens(opts.env);
      rt.print(
        opts.json,
        list,
        table(
          ['ID', 'NAME', 'SCOPE', 'CREATED', 'EXPIRES'],
          list.map((t) => [t.id, t.name, t.scopes.join(','), t.createdUTC, t.expiresUTC ?? 'never']),
        ),
      );
    },
  );

  withEnv(leaf(token, 'revoke <idOrName>', 'revoke a token at once')).action(
    async (idOrName: string, opts: EnvOpts) => {
      const { admin } = await rt.services();
      const revoked = await admin.revokeToken(opts.env, idOrName);
      rt.print(opts.json, revoked, `revoked token ${revoked.id} (${revoked.name})`);
    },
  );
}

function addUserCommands(program: Command, rt: Runtime) {
  const user = program.command('user').description('users who log in to the read API');
  type UserOpts = EnvOpts & { username: string };

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
      const { admin } = await rt.services();
      const created = await admin.createUser(opts.env, opts.username, password, opts.role);
      rt.print(
        opts.json,
        { env: opts.env, ...created },
        `created ${created.role} ${opts.username} in ${opts.env}`,
      );
    });

  withEnv(leaf(user, 'list', 'list users')).action(async (opts: EnvOpts) => {
    const { admin } = await rt.services();
    const list = await admin.listUsers(opts.env);
    rt.print(
      opts.json,
      list,
      table(
        ['USERNAME', 'ROLE', 'MFA', 'CREATED'],
        list.map((u) => [u.username, u.role, u.mfaEnabled ? 'on' : 'off', u.createdUTC]),
      ),
    );
  });

  withEnv(leaf(user, 'role', "change a user's role (their login tokens follow at once)"))
    .requiredOption('--username <username>', 'the user')
    .requiredOption('--role <role>', 'admin, operator or viewer', role)
    .action(async (opts: UserOpts & { role: UserRole }) => {
      const { admin } = await rt.services();
      const changed = await admin.setRole(opts.env, opts.username, opts.role);
      rt.print(opts.json, { env: opts.env, ...changed }, `${opts.username} is now ${changed.role}`);
    });

  withEnv(leaf(user, 'delete', 'delete a user (their login tokens stop working)'))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts) => {
      const { admin } = await rt.services();
      await admin.deleteUser(opts.env, opts.username);
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
      const { admin } = await rt.services();
      await admin.setPassword(opts.env, opts.username, password);
      rt.print(opts.json, { env: opts.env, username: opts.username }, `password of ${opts.username} changed`);
    });

  const mfa = user.command('mfa').description('TOTP second factor (RFC 6238, 6 digits, 30 s)');
  withEnv(leaf(mfa, 'enable', 'turn on TOTP; prints the otpauth URI and a QR code once'))
    .requiredOption('--username <username>', 'the user')
    .action(async (opts: UserOpts) => {
      const { admin } = await rt.services();
      const { uri, secret } = await admin.enableMfa(opts.env, opts.username);
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
      const { admin } = await rt.services();
      await admin.disableMfa(opts.env, opts.username);
      rt.print(
        opts.json,
        { env: opts.env, username: opts.username, mfaEnabled: false },
        `MFA disabled for ${opts.username}`,
      );
    });
}
