/**
 * Administration of an environment's users: password (scrypt), role and TOTP second factor.
 *
 * Each user record carries a credential generation (UserRecord.generation), and every console
 * session and login token stores the generation it was issued under. Creating a user, setting a
 * password and turning MFA on or off give the user a new generation, so whatever was issued under
 * the old credentials — or to an earlier user of the same name — stops matching; deleting a user
 * removes the record, so nothing matches. A role change keeps the generation: what was issued
 * follows the role. Every change is a read-modify-write under WATCH, so two changes at once cannot
 * undo each other (a role change cannot write back a generation a password change replaced, nor
 * bring back a deleted user).
 */
import { AppError } from '../errors/app-error.ts';
import { checkPassword } from './admin-credentials.ts';
import { checkName, type AdminContext } from './admin-support.ts';
import { decodeUser, roleOf } from './records.ts';
import { generateGeneration, generateTotpSecret, hashPassword, totpUri, verifyPassword } from './secrets.ts';
import type { UserRecord, UserRole } from './types.ts';

/** The user with `changes` to how they sign in: a new generation ends what was issued before. */
const withNewCredentials = (user: UserRecord, changes: Partial<UserRecord>): UserRecord => ({
  ...user,
  ...changes,
  generation: generateGeneration(),
});

export function createUserAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  async function getUser(env: string, username: string): Promise<UserRecord> {
    await ctx.requireEnv(env);
    const user = decodeUser(await redis.hget(keys.users(env), username));
    if (!user) throw new AppError('USER_NOT_FOUND', `no user ${JSON.stringify(username)} in ${env}`);
    return user;
  }

  /** Stores `change` of the user as read inside the transaction; USER_NOT_FOUND when there is none. */
  async function updateUser(env: string, username: string, change: (user: UserRecord) => UserRecord) {
    return writeUser(env, username, async () => change(await getUser(env, username)));
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
    /** Creates a user; an operator unless `role` says viewer. */
    async createUser(env: string, username: string, password: string, role: UserRole = 'operator') {
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
      };
      if (!(await redis.hsetnx(keys.users(env), username, JSON.stringify(user)))) {
        throw new AppError('ALREADY_EXISTS', `user ${username} exists already in ${env}`);
      }
      return { username, role, createdUTC: user.createdUTC };
    },
    /**
     * Provisioning: creates the user, or resets the password or role where they differ. A new
     * password ends the user's sessions and login tokens; the same one (applying the same files
     * again) ends nothing.
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
            { username, role, passwordHash, mfaEnabled: false, createdUTC: ctx.nowUTC() },
            {},
          );
        return now.passwordHash === passwordHash
          ? { ...now, role }
          : withNewCredentials(now, { role, passwordHash });
      });
      return true;
    },
    async listUsers(env: string) {
      await ctx.requireEnv(env);
      const h = await redis.hgetall(keys.users(env));
      return Object.values(h)
        .map((json) => JSON.parse(json) as UserRecord)
        .map((u) => ({
          username: u.username,
          role: roleOf(u),
          mfaEnabled: u.mfaEnabled,
          createdUTC: u.createdUTC,
        }))
        .sort((a, b) => a.username.localeCompare(b.username));
    },
    /** Changes a user's role; their sessions and login tokens follow it, within the credential cache time. */
    async setRole(env: string, username: string, role: UserRole) {
      await updateUser(env, username, (user) => ({ ...user, role }));
      return { username, role };
    },
    /** Deletes the user: nothing issued to them matches any user any more, one made later under the name included. */
    async deleteUser(env: string, username: string) {
      await getUser(env, username);
      await redis.multi().hdel(keys.users(env), username).del(keys.loginFailures(env, username)).exec();
    },
    /** Sets a new password; the user's sessions and login tokens end. */
    async setPassword(env: string, username: string, password: string) {
      checkPassword(password);
      const passwordHash = await hashPassword(password);
      await updateUser(env, username, (user) => withNewCredentials(user, { passwordHash }));
    },
    /**
     * Turns TOTP on with a new secret and ends the user's sessions and login tokens (they were signed
     * in without it); returns the otpauth URI (the only time it is shown).
     */
    async enableMfa(env: string, username: string, issuer = 'Vigil') {
      const secret = generateTotpSecret();
      await updateUser(env, username, (user) => {
        if (user.mfaEnabled)
          throw new AppError('ALREADY_EXISTS', `MFA is already enabled for ${username}; disable it first`);
        return withNewCredentials(user, { mfaEnabled: true, mfaSecret: secret });
      });
      return { username, secret, uri: totpUri(secret, issuer, `${env}:${username}`) };
    },
    /**
     * Turns TOTP off and forgets the secret. As a reset of a lost or exposed second factor, it ends
     * the user's sessions and login tokens too; a user without MFA is left as they are.
     */
    async disableMfa(env: string, username: string) {
      await updateUser(env, username, ({ mfaSecret, ...user }) =>
        user.mfaEnabled || mfaSecret !== undefined ? withNewCredentials(user, { mfaEnabled: false }) : user,
      );
    },
  };
}

export type UserAdmin = ReturnType<typeof createUserAdmin>;
