/**
 * Administration of an environment's users: password (scrypt), role, TOTP second factor, and
 * whether they may sign in at all.
 *
 * Each user record carries a credential generation (UserRecord.generation), and every console
 * session and login token stores the generation it was issued under. Creating a user, setting a
 * password, turning MFA on or off and disabling the user give the user a new generation, so
 * whatever was issued under the old credentials — or to an earlier user of the same name — stops
 * matching; deleting a user removes the record, so nothing matches. A role change keeps the
 * generation: what was issued follows the role. Enabling a disabled user keeps it too: what was
 * issued before the user was disabled stays ended. Every change is a read-modify-write under WATCH,
 * so two changes at once cannot undo each other (a role change cannot write back a generation a
 * password change replaced, nor bring back a deleted user).
 *
 * Every change counts in the user's revision (UserRecord.revision); a change that names the
 * revision it was based on is refused with CONFLICT when the user has moved on. The environment's
 * last admin who can sign in cannot be demoted, disabled or deleted (LAST_ADMIN): that would leave
 * nobody to manage the environment but whoever runs the server. Provisioning (`putUser`) is the
 * server's own, and not held to it.
 */
import { AppError } from '../errors/app-error.ts';
import { checkPassword } from './admin-credentials.ts';
import { checkName, type AdminContext } from './admin-support.ts';
import { decodeUser, roleOf, userRevisionOf } from './records.ts';
import { generateGeneration, generateTotpSecret, hashPassword, totpUri, verifyPassword } from './secrets.ts';
import type { UserRecord, UserRole } from './types.ts';

/** A user as listed and audited: never the password hash or the MFA secret. */
export interface PublicUser {
  username: string;
  role: UserRole;
  mfaEnabled: boolean;
  disabled: boolean;
  createdUTC: string;
  revision: number;
}

export const publicUser = (u: UserRecord): PublicUser => ({
  username: u.username,
  role: roleOf(u),
  mfaEnabled: u.mfaEnabled,
  disabled: u.disabled === true,
  createdUTC: u.createdUTC,
  revision: userRevisionOf(u),
});

/** A change of a user: the user before and after (the same when nothing changed). */
export interface UserChange {
  before: PublicUser;
  after: PublicUser;
  /** False when the user was already as asked (nothing written). */
  changed: boolean;
}

/** The user with `changes`, one revision on. */
const revised = (user: UserRecord, changes: Partial<UserRecord>): UserRecord => ({
  ...user,
  ...changes,
  revision: userRevisionOf(user) + 1,
});

/** The user with `changes` to how they sign in: a new generation ends what was issued before. */
const withNewCredentials = (user: UserRecord, changes: Partial<UserRecord>): UserRecord => ({
  ...revised(user, changes),
  generation: generateGeneration(),
});

/** An admin who can sign in: what LAST_ADMIN keeps at least one of. */
const isActiveAdmin = (u: UserRecord): boolean => roleOf(u) === 'admin' && u.disabled !== true;

/** What a change of a user expects: the revision it was based on, and whether it may leave no admin. */
interface ChangeRules {
  /** CONFLICT unless the user is at this revision. Absent: last writer wins. */
  revision?: number | undefined;
  /** Refused with LAST_ADMIN when the change would leave the environment without an active admin. */
  keepAnAdmin?: boolean;
}

export function createUserAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  async function getUser(env: string, username: string): Promise<UserRecord> {
    await ctx.requireEnv(env);
    const user = decodeUser(await redis.hget(keys.users(env), username));
    if (!user) throw new AppError('USER_NOT_FOUND', `no user ${JSON.stringify(username)} in ${env}`);
    return user;
  }

  /** Every user of the environment, as stored. */
  async function allUsers(env: string): Promise<UserRecord[]> {
    return Object.values(await redis.hgetall(keys.users(env))).map((json) => JSON.parse(json) as UserRecord);
  }

  /** CONFLICT unless `user` is at the revision `rules` expect. */
  function checkRevision(user: UserRecord, rules: ChangeRules): void {
    if (rules.revision === undefined || rules.revision === userRevisionOf(user)) return;
    const revision = userRevisionOf(user);
    throw new AppError(
      'CONFLICT',
      `user ${user.username} is at revision ${revision}, not ${rules.revision}: it changed since it was read; read it again and repeat the change`,
      { details: { username: user.username, revision } },
    );
  }

  /** LAST_ADMIN when `user` is the environment's only active admin and `next` (null: deleted) is not one. */
  async function checkAnAdminStays(env: string, user: UserRecord, next: UserRecord | null): Promise<void> {
    if (!isActiveAdmin(user) || (next !== null && isActiveAdmin(next))) return;
    const others = (await allUsers(env)).filter((u) => u.username !== user.username && isActiveAdmin(u));
    if (others.length === 0) {
      throw new AppError(
        'LAST_ADMIN',
        `${user.username} is the last admin of ${env} who can sign in: make another user admin first`,
        { details: { username: user.username } },
      );
    }
  }

  /**
   * Stores `change` of the user as read inside the transaction, under `rules`; USER_NOT_FOUND when
   * there is none. A change that returns the user as it was writes nothing.
   */
  async function updateUser(
    env: string,
    username: string,
    change: (user: UserRecord) => UserRecord,
    rules: ChangeRules = {},
  ): Promise<UserChange> {
    const seen: { before?: UserRecord; after?: UserRecord } = {};
    await ctx.atomically(
      [keys.users(env)],
      async () => {
        const before = await getUser(env, username);
        checkRevision(before, rules);
        const after = change(before);
        if (after !== before && rules.keepAnAdmin) await checkAnAdminStays(env, before, after);
        seen.before = before;
        seen.after = after;
      },
      (m) => {
        if (seen.after !== seen.before) m.hset(keys.users(env), username, JSON.stringify(seen.after));
      },
    );
    const { before, after } = seen as { before: UserRecord; after: UserRecord };
    return { before: publicUser(before), after: publicUser(after), changed: after !== before };
  }

  /** Stores what `next` makes of the user's record, in a transaction that fails if it changed meanwhile. */
  async function writeUser(env: string, username: string, next: () => Promise<UserRecord>) {
    const written: { user?: UserRecord } = {};
    await ctx.atomically(
      [keys.users(env)],
      async () => {
        written.user = await next();
      },
      (m) => m.hset(keys.users(env), username, JSON.stringify(written.user)),
    );
    return written.user;
  }

  return {
    /** Creates a user; an operator unless `role` says otherwise. Answers the user as listed. */
    async createUser(
      env: string,
      username: string,
      password: string,
      role: UserRole = 'operator',
    ): Promise<PublicUser> {
      checkName('username', username);
      checkPassword(password);
      await ctx.requireEnv(env);
      const user: UserRecord = {
        username,
        role,
        passwordHash: await hashPassword(password),
        mfaEnabled: false,
        createdUTC: ctx.nowUTC(),
        generation: generateGeneration(),
        revision: 1,
      };
      if (!(await redis.hsetnx(keys.users(env), username, JSON.stringify(user)))) {
        throw new AppError('ALREADY_EXISTS', `user ${username} exists already in ${env}`);
      }
      return publicUser(user);
    },
    /**
     * Provisioning: creates the user, or resets the password or role where they differ. A new
     * password ends the user's sessions and login tokens; the same one (applying the same files
     * again) ends nothing. Whether the user is disabled is left as it is.
     */
    async putUser(
      env: string,
      username: string,
      password: string,
      role: UserRole = 'operator',
    ): Promise<boolean> {
      checkName('username', username);
      checkPassword(password);
      await ctx.requireEnv(env);
      const before = decodeUser(await redis.hget(keys.users(env), username));
      const samePassword = before !== null && (await verifyPassword(password, before.passwordHash));
      if (before && samePassword && roleOf(before) === role) return false;
      const passwordHash = samePassword && before ? before.passwordHash : await hashPassword(password);
      await writeUser(env, username, async () => {
        const now = decodeUser(await redis.hget(keys.users(env), username));
        if (!now)
          return withNewCredentials(
            { username, role, passwordHash, mfaEnabled: false, createdUTC: ctx.nowUTC(), revision: 0 },
            {},
          );
        return now.passwordHash === passwordHash
          ? revised(now, { role })
          : withNewCredentials(now, { role, passwordHash });
      });
      return true;
    },
    async listUsers(env: string): Promise<PublicUser[]> {
      await ctx.requireEnv(env);
      return (await allUsers(env)).map(publicUser).sort((a, b) => a.username.localeCompare(b.username));
    },
    /** The user as listed; USER_NOT_FOUND when there is none. */
    async getUser(env: string, username: string): Promise<PublicUser> {
      return publicUser(await getUser(env, username));
    },
    /**
     * Changes a user's role; their sessions and login tokens follow it, within the credential cache
     * time. LAST_ADMIN for the last active admin made something else.
     */
    async setRole(env: string, username: string, role: UserRole, revision?: number) {
      const change = await updateUser(
        env,
        username,
        (user) => (roleOf(user) === role ? user : revised(user, { role })),
        { revision, keepAnAdmin: true },
      );
      return { username, role, ...change };
    },
    /**
     * Disables a user: they cannot sign in (ACCOUNT_DISABLED), and their sessions and login tokens
     * end at once (a new generation). LAST_ADMIN for the last active admin.
     */
    async disableUser(env: string, username: string, revision?: number): Promise<UserChange> {
      return updateUser(
        env,
        username,
        (user) => (user.disabled === true ? user : withNewCredentials(user, { disabled: true })),
        { revision, keepAnAdmin: true },
      );
    },
    /** Lets a disabled user sign in again; what was issued before they were disabled stays ended. */
    async enableUser(env: string, username: string, revision?: number): Promise<UserChange> {
      return updateUser(
        env,
        username,
        (user) => {
          if (user.disabled !== true) return user;
          const { disabled: _disabled, ...enabled } = user;
          return revised(enabled, {});
        },
        { revision },
      );
    },
    /**
     * Deletes the user: nothing issued to them matches any user any more, one made later under the
     * name included. LAST_ADMIN for the last active admin. Answers the user as they were.
     */
    async deleteUser(env: string, username: string): Promise<PublicUser> {
      const seen: { user?: UserRecord } = {};
      await ctx.atomically(
        [keys.users(env)],
        async () => {
          const user = await getUser(env, username);
          await checkAnAdminStays(env, user, null);
          seen.user = user;
        },
        (m) => m.hdel(keys.users(env), username).del(keys.loginFailures(env, username)),
      );
      return publicUser(seen.user as UserRecord);
    },
    /** Sets a new password; the user's sessions and login tokens end. */
    async setPassword(env: string, username: string, password: string): Promise<UserChange> {
      checkPassword(password);
      const passwordHash = await hashPassword(password);
      return updateUser(env, username, (user) => withNewCredentials(user, { passwordHash }));
    },
    /**
     * Turns TOTP on with a new secret and ends the user's sessions and login tokens (they were signed
     * in without it); returns the otpauth URI (the only time it is shown).
     */
    async enableMfa(env: string, username: string, issuer = 'Vigil') {
      const secret = generateTotpSecret();
      const change = await updateUser(env, username, (user) => {
        if (user.mfaEnabled)
          throw new AppError('ALREADY_EXISTS', `MFA is already enabled for ${username}; disable it first`);
        return withNewCredentials(user, { mfaEnabled: true, mfaSecret: secret });
      });
      return { username, secret, uri: totpUri(secret, issuer, `${env}:${username}`), ...change };
    },
    /**
     * Turns TOTP off and forgets the secret. As a reset of a lost or exposed second factor, it ends
     * the user's sessions and login tokens too; a user without MFA is left as they are.
     */
    async disableMfa(env: string, username: string): Promise<UserChange> {
      return updateUser(env, username, (user) => {
        const { mfaSecret, ...rest } = user;
        return user.mfaEnabled || mfaSecret !== undefined
          ? withNewCredentials(rest, { mfaEnabled: false })
          : user;
      });
    },
  };
}

export type UserAdmin = ReturnType<typeof createUserAdmin>;
