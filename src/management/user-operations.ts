/**
 * Managing an environment's users: create, list, change a role, disable and enable, delete, set a
 * password, and the TOTP second factor (enable, answering the otpauth URI once; reset). The rules
 * are the CLI's (tenancy/admin-users.ts): a password change, an MFA change and disabling end the
 * user's sessions and login tokens at once; the last admin who can sign in cannot be demoted,
 * disabled or deleted (409 LAST_ADMIN); a change naming a revision the user has moved on from is
 * 409 CONFLICT. The audit log keeps the user as listed, never the password hash or the MFA secret.
 */
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str } from '../api/json-schema.ts';
import type { PublicUser, UserAdmin, UserChange } from '../tenancy/admin-users.ts';
import { USER_ROLES } from '../tenancy/types.ts';
import type { AuditAction } from '../audit/audit-log.ts';
import { changed, operation, unchanged, type Operation, type Outcome } from './operation.ts';

export interface UserOperationDeps {
  users: Pick<
    UserAdmin,
    | 'createUser'
    | 'listUsers'
    | 'setRole'
    | 'disableUser'
    | 'enableUser'
    | 'deleteUser'
    | 'setPassword'
    | 'enableMfa'
    | 'disableMfa'
  >;
}

export const USER_SCHEMA = objectOf({
  username: str,
  role: { enum: [...USER_ROLES] },
  mfaEnabled: bool,
  disabled: { ...bool, description: 'A disabled user cannot sign in (401 ACCOUNT_DISABLED).' },
  createdUTC: str,
  revision: int,
});

const username = () => attr.string().describe('The user.');
const role = () =>
  attr
    .oneOf(USER_ROLES)
    .describe('admin manages the environment, operator also acknowledges alarms, viewer only reads.');
const revision = () =>
  attr
    .number({ integer: true, min: 1 })
    .optional()
    .describe(
      'The revision the change is based on; 409 CONFLICT when the user has another. Absent: last writer wins.',
    );

/** The outcome of a change of a user: the user as they are now, audited when something changed. */
const outcomeOf = (action: AuditAction, change: UserChange): Outcome<PublicUser> =>
  change.changed
    ? changed(change.after, {
        action,
        target: change.after.username,
        before: change.before,
        after: change.after,
      })
    : unchanged(change.after);

export function userOperations(deps: UserOperationDeps): Operation[] {
  const { users } = deps;
  const answer = (summary: string, errors: string[] = ['404']) => ({ summary, data: USER_SCHEMA, errors });
  return [
    operation({
      path: '/users/create',
      scope: 'admin',
      attributes: strictAttributes({
        username: username(),
        password: attr.string().describe('8 to 1024 characters (stored as a scrypt hash).'),
        role: role().optional().describe('operator when absent.'),
      }),
      answer: answer('Create a user', ['409']),
      async run(caller, a) {
        const created = await users.createUser(caller.env, a.username, a.password, a.role ?? 'operator');
        return changed(created, { action: 'user.create', target: created.username, after: created });
      },
    }),
    operation({
      path: '/users/list',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: { summary: 'The users, by username', data: arrayOf(USER_SCHEMA), errors: [] },
      async run(caller) {
        return unchanged(await users.listUsers(caller.env));
      },
    }),
    operation({
      path: '/users/role',
      scope: 'admin',
      attributes: strictAttributes({ username: username(), role: role(), revision: revision() }),
      answer: answer(
        'Change a user’s role; their sessions and login tokens follow it (409 LAST_ADMIN for the last admin)',
        ['404', '409'],
      ),
      async run(caller, a) {
        return outcomeOf('user.role', await users.setRole(caller.env, a.username, a.role, a.revision));
      },
    }),
    operation({
      path: '/users/disable',
      scope: 'admin',
      attributes: strictAttributes({ username: username(), revision: revision() }),
      answer: answer(
        'Disable a user: they cannot sign in, and their sessions and login tokens end at once (409 LAST_ADMIN for the last admin)',
        ['404', '409'],
      ),
      async run(caller, a) {
        return outcomeOf('user.disable', await users.disableUser(caller.env, a.username, a.revision));
      },
    }),
    operation({
      path: '/users/enable',
      scope: 'admin',
      attributes: strictAttributes({ username: username(), revision: revision() }),
      answer: answer('Let a disabled user sign in again', ['404', '409']),
      async run(caller, a) {
        return outcomeOf('user.enable', await users.enableUser(caller.env, a.username, a.revision));
      },
    }),
    operation({
      path: '/users/delete',
      scope: 'admin',
      attributes: strictAttributes({ username: username() }),
      answer: {
        summary: 'Delete a user: their sessions and login tokens end (409 LAST_ADMIN for the last admin)',
        data: objectOf({ username: str, deleted: bool }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const deleted = await users.deleteUser(caller.env, a.username);
        return changed(
          { username: deleted.username, deleted: true },
          { action: 'user.delete', target: deleted.username, before: deleted },
        );
      },
    }),
    operation({
      path: '/users/password',
      scope: 'admin',
      attributes: strictAttributes({
        username: username(),
        password: attr.string().describe('8 to 1024 characters.'),
      }),
      answer: answer('Set a user’s password; their sessions and login tokens end'),
      async run(caller, a) {
        return outcomeOf('user.password', await users.setPassword(caller.env, a.username, a.password));
      },
    }),
    operation({
      path: '/users/resetMfa',
      scope: 'admin',
      attributes: strictAttributes({ username: username() }),
      answer: answer(
        'Turn a user’s second factor off (a lost or exposed one); their sessions and login tokens end',
      ),
      async run(caller, a) {
        return outcomeOf('user.reset-mfa', await users.disableMfa(caller.env, a.username));
      },
    }),
    operation({
      path: '/users/enableMfa',
      scope: 'admin',
      attributes: strictAttributes({ username: username() }),
      answer: {
        summary:
          'Turn on a user’s TOTP second factor: the otpauth URI (with its secret) is in this answer only',
        data: objectOf({
          username: str,
          otpauthUri: { ...str, description: 'otpauth://totp/…: for an authenticator app, as a QR code.' },
          user: USER_SCHEMA,
        }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const { uri, before, after } = await users.enableMfa(caller.env, a.username);
        return changed(
          { username: after.username, otpauthUri: uri, user: after },
          { action: 'user.enable-mfa', target: after.username, before, after },
        );
      },
    }),
  ];
}
