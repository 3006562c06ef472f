/**
 * The console's pages of API keys, service tokens and users (admins). A new key or token is shown
 * once, in the answer to the form that made it (never in a redirect's URL, never stored for a later
 * page); every change is a management operation run as the session's user. A key's auto-create
 * rule is set in the new key's form, and changed or cleared on a page of its own.
 */
import type { Router } from 'express';
import { AppError } from '../errors/app-error.ts';
import type { PublicApiKey, PublicToken } from '../tenancy/admin-credentials.ts';
import type { PublicUser } from '../tenancy/admin-users.ts';
import type { ConsoleContext } from './console-context.ts';
import { adminPage, labelRowsOf, labelsOf, postForm, runAs, type FormRequest } from './manage-forms.ts';
import type { ConsoleSession } from './sessions.ts';
import { paths } from './views/format.ts';
import {
  apiKeysBody,
  deleteUserBody,
  newKeyShown,
  newTokenShown,
  revokeKeyBody,
  revokeTokenBody,
  rotatedKeyShown,
  tokensBody,
  usersBody,
} from './views/manage-access-view.ts';
import {
  autoCreateBody,
  autoCreateValuesOf,
  type AutoCreateValues,
} from './views/manage-auto-create-view.ts';
import { definitionOfValue, type DefinitionChoice } from './views/manage-devices-view.ts';

/** The auto-create fields as typed, for the form shown again. */
const typedRule = (f: FormRequest): AutoCreateValues => ({
  definition: f.text('autoCreateDefinition'),
  labels: labelRowsOf(f),
  maxDevices: f.text('autoCreateMax'),
});

/** The auto-create rule of a form, as the operations take it; null when no definition is chosen. */
function ruleOf(f: FormRequest): Record<string, unknown> | null {
  const definition = definitionOfValue(f.text('autoCreateDefinition'));
  if (!definition) return null;
  return { ...definition, labels: labelsOf(labelRowsOf(f)), maxDevices: f.text('autoCreateMax') };
}

export function manageAccessRoutes(router: Router, ctx: ConsoleContext): void {
  const keysOf = (s: ConsoleSession) => runAs<PublicApiKey[]>(ctx, s, '/apikeys/list', {});
  const tokensOf = (s: ConsoleSession) => runAs<PublicToken[]>(ctx, s, '/tokens/list', {});
  const usersOf = (s: ConsoleSession) => runAs<PublicUser[]>(ctx, s, '/users/list', {});
  const definitionsOf = (s: ConsoleSession) => runAs<DefinitionChoice[]>(ctx, s, '/definitions/list', {});
  const now = () => ctx.clock();

  // API keys.
  const keysPage = async (
    f: Pick<FormRequest, 'session' | 'show'>,
    status: number,
    o: Partial<Parameters<typeof apiKeysBody>[0]> = {},
  ) =>
    f.show(
      status,
      'API keys',
      apiKeysBody({
        session: f.session,
        keys: await keysOf(f.session),
        definitions: await definitionsOf(f.session),
        nowMs: now(),
        ...o,
      }),
    );
  const keyOf = async (s: ConsoleSession, id: string) => {
    const key = (await keysOf(s)).find((k) => k.id === id);
    if (!key) throw new AppError('CREDENTIAL_NOT_FOUND', `This environment has no API key ${id}.`);
    return key;
  };
  adminPage(router, ctx, '/manage/api-keys', async (_req, res, session) => {
    ctx.render(res, 200, {
      title: 'API keys',
      session,
      active: 'manage',
      body: apiKeysBody({
        session,
        keys: await keysOf(session),
        definitions: await definitionsOf(session),
        nowMs: now(),
      }),
    });
  });
  postForm(router, ctx, '/manage/api-keys/create', {
    async submit(f) {
      const name = f.text('name');
      const autoCreate = ruleOf(f);
      const created = await f.run<{ name: string; key: string }>('/apikeys/create', {
        ...(name === '' ? {} : { name }),
        ...(autoCreate === null ? {} : { autoCreate }),
      });
      await keysPage(f, 200, { shown: newKeyShown(created) });
      return 'shown';
    },
    again: (f, error) => keysPage(f, error.status, { error, name: f.text('name'), autoCreate: typedRule(f) }),
  });
  adminPage(router, ctx, '/manage/api-keys/:id/auto-create', async (req, res, session) => {
    const apiKey = await keyOf(session, String(req.params.id));
    ctx.render(res, 200, {
      title: `Auto-create of ${apiKey.name}`,
      session,
      active: 'manage',
      body: autoCreateBody({
        session,
        apiKey,
        values: autoCreateValuesOf(apiKey),
        definitions: await definitionsOf(session),
      }),
    });
  });
  postForm(router, ctx, '/manage/api-keys/:id/auto-create', {
    async submit(f) {
      const updated = await f.run<PublicApiKey>('/apikeys/update', {
        id: String(f.req.params.id),
        autoCreate: ruleOf(f),
        ...(f.text('revision') === '' ? {} : { revision: f.text('revision') }),
      });
      const what = updated.autoCreate
        ? `creates devices of ${updated.autoCreate.definitionName} it does not know, at most ${updated.autoCreate.maxDevices}`
        : 'creates no devices';
      return { redirect: paths.apiKeys, flash: `API key ${updated.name} ${what}.` };
    },
    async again(f, error) {
      const apiKey = await keyOf(f.session, String(f.req.params.id));
      // A change made meanwhile: the current rule, to make the change again on; else what was typed.
      const values = error.code === 'CONFLICT' ? autoCreateValuesOf(apiKey) : typedRule(f);
      const definitions = await definitionsOf(f.session);
      f.show(
        error.status,
        `Auto-create of ${apiKey.name}`,
        autoCreateBody({ session: f.session, apiKey, values, definitions, error }),
      );
    },
  });
  postForm(router, ctx, '/manage/api-keys/rotate', {
    async submit(f) {
      const rotated = await f.run<{
        name: string;
        key: string;
        previous: { name: string; expiresUTC: string };
      }>('/apikeys/rotate', { id: f.text('id'), overlapMinutes: f.text('overlapMinutes') });
      await keysPage(f, 200, { shown: rotatedKeyShown(rotated, now()) });
      return 'shown';
    },
    again: (f, error) => keysPage(f, error.status, { error }),
  });
  adminPage(router, ctx, '/manage/api-keys/:id/revoke', async (req, res, session) => {
    const key = await keyOf(session, String(req.params.id));
    ctx.render(res, 200, {
      title: `Revoke ${key.name}`,
      session,
      active: 'manage',
      body: revokeKeyBody(session, key),
    });
  });
  postForm(router, ctx, '/manage/api-keys/:id/revoke', {
    async submit(f) {
      const revoked = await f.run<{ name: string }>('/apikeys/revoke', { id: String(f.req.params.id) });
      return { redirect: paths.apiKeys, flash: `API key ${revoked.name} revoked.` };
    },
    again: (f, error) => keysPage(f, error.status, { error }),
  });

  // Service tokens.
  const tokensPage = async (
    f: Pick<FormRequest, 'session' | 'show'>,
    status: number,
    o: Partial<Parameters<typeof tokensBody>[0]> = {},
  ) =>
    f.show(
      status,
      'Service tokens',
      tokensBody({ session: f.session, tokens: await tokensOf(f.session), ...o }),
    );
  adminPage(router, ctx, '/manage/tokens', async (_req, res, session) => {
    ctx.render(res, 200, {
      title: 'Service tokens',
      session,
      active: 'manage',
      body: tokensBody({ session, tokens: await tokensOf(session) }),
    });
  });
  postForm(router, ctx, '/manage/tokens/create', {
    async submit(f) {
      const name = f.text('name');
      const days = f.text('expiresInDays');
      const created = await f.run<{
        name: string;
        token: string;
        scopes: string[];
        expiresUTC: string | null;
      }>('/tokens/create', {
        ...(name === '' ? {} : { name }),
        scopes: f.text('scopes'),
        ...(days === '' ? {} : { expiresUTC: expiresAfterDays(days, now()) }),
      });
      await tokensPage(f, 200, { shown: newTokenShown(created) });
      return 'shown';
    },
    again: (f, error) =>
      tokensPage(f, error.status, {
        error,
        values: { name: f.text('name'), scopes: f.text('scopes'), days: f.text('expiresInDays') },
      }),
  });
  const tokenOf = async (s: ConsoleSession, id: string) => {
    const token = (await tokensOf(s)).find((t) => t.id === id);
    if (!token) throw new AppError('CREDENTIAL_NOT_FOUND', `This environment has no service token ${id}.`);
    return token;
  };
  adminPage(router, ctx, '/manage/tokens/:id/revoke', async (req, res, session) => {
    const token = await tokenOf(session, String(req.params.id));
    ctx.render(res, 200, {
      title: `Revoke ${token.name}`,
      session,
      active: 'manage',
      body: revokeTokenBody(session, token),
    });
  });
  postForm(router, ctx, '/manage/tokens/:id/revoke', {
    async submit(f) {
      const revoked = await f.run<{ name: string }>('/tokens/revoke', { id: String(f.req.params.id) });
      return { redirect: paths.tokens, flash: `Token ${revoked.name} revoked.` };
    },
    again: (f, error) => tokensPage(f, error.status, { error }),
  });

  // Users.
  const usersPage = async (
    f: Pick<FormRequest, 'session' | 'show'>,
    status: number,
    o: Partial<Parameters<typeof usersBody>[0]> = {},
  ) => f.show(status, 'Users', usersBody({ session: f.session, users: await usersOf(f.session), ...o }));
  adminPage(router, ctx, '/manage/users', async (_req, res, session) => {
    ctx.render(res, 200, {
      title: 'Users',
      session,
      active: 'manage',
      body: usersBody({ session, users: await usersOf(session) }),
    });
  });
  postForm(router, ctx, '/manage/users/create', {
    async submit(f) {
      const created = await f.run<PublicUser>('/users/create', {
        username: f.text('username'),
        password: f.text('password', { raw: true }),
        role: f.text('role'),
      });
      return { redirect: paths.users, flash: `User ${created.username} created (${created.role}).` };
    },
    // The password is never sent back.
    again: (f, error) =>
      usersPage(f, error.status, { error, values: { username: f.text('username'), role: f.text('role') } }),
  });
  const userChange = (path: string, done: (u: PublicUser) => string, role = false) => ({
    async submit(f: FormRequest) {
      const u = await f.run<PublicUser>(path, {
        username: f.text('username'),
        ...(role ? { role: f.text('role') } : {}),
        ...(path === '/users/resetMfa' || f.text('revision') === '' ? {} : { revision: f.text('revision') }),
      });
      return { redirect: paths.users, flash: done(u) };
    },
    again: (f: FormRequest, error: AppError) => usersPage(f, error.status, { error }),
  });
  postForm(
    router,
    ctx,
    '/manage/users/role',
    userChange('/users/role', (u) => `${u.username} is ${u.role} now.`, true),
  );
  postForm(
    router,
    ctx,
    '/manage/users/disable',
    userChange('/users/disable', (u) => `${u.username} is disabled: their sessions ended.`),
  );
  postForm(
    router,
    ctx,
    '/manage/users/enable',
    userChange('/users/enable', (u) => `${u.username} may sign in again.`),
  );
  postForm(
    router,
    ctx,
    '/manage/users/reset-mfa',
    userChange('/users/resetMfa', (u) => `${u.username} signs in without MFA now; their sessions ended.`),
  );
  const userOf = async (s: ConsoleSession, username: string) => {
    const user = (await usersOf(s)).find((u) => u.username === username);
    if (!user) throw new AppError('USER_NOT_FOUND', `This environment has no user ${username}.`);
    return user;
  };
  adminPage(router, ctx, '/manage/users/:username/delete', async (req, res, session) => {
    const user = await userOf(session, String(req.params.username));
    ctx.render(res, 200, {
      title: `Delete ${user.username}`,
      session,
      active: 'manage',
      body: deleteUserBody(session, user),
    });
  });
  postForm(router, ctx, '/manage/users/:username/delete', {
    async submit(f) {
      const deleted = await f.run<{ username: string }>('/users/delete', {
        username: String(f.req.params.username),
      });
      return { redirect: paths.users, flash: `User ${deleted.username} deleted.` };
    },
    async again(f, error) {
      const user = await userOf(f.session, String(f.req.params.username));
      f.show(error.status, `Delete ${user.username}`, deleteUserBody(f.session, user, error));
    },
  });
}

/** The ISO time `days` days from now; the text as it is when it is not a number (the operation refuses it). */
function expiresAfterDays(days: string, nowMs: number): string {
  const n = Number(days);
  return Number.isFinite(n) && n > 0 ? new Date(nowMs + n * 86_400_000).toISOString() : days;
}
