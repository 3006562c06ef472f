/**
 * Definitions and their editor. A definition is looked up in the session's environment (its private
 * ones) or among the public ones, never another environment's. The editor's page posts one form:
 * Load (a device's recent payloads), Run, Replay, Save as draft, Publish; a version's form Roll back
 * or Publish. Changes go through the management operations (/definitions/apply, /publish,
 * /rollback: scope admin, audited as the user), Run and Replay through the workbench (the API's own
 * trials, counted per session), and the editor's check as you type through /definitions/check.
 * Every POST checks the origin and the session's token.
 */
import express, { type Request, type Response, type Router } from 'express';
import { definitionYaml } from '../domain/definition-spec.ts';
import { AppError, isAppError } from '../errors/app-error.ts';
import type { ErrorCode } from '../errors/catalogue.ts';
import { checkDraft } from '../management/definition-operations.ts';
import { checkDraftParser, draftSpec } from '../management/definition-trial-operations.ts';
import {
  draftCode,
  MAX_REPLAY_PAYLOADS,
  storedCode,
  type TrialCode,
} from '../management/definition-trials.ts';
import type { Caller } from '../management/operation.ts';
import { listRecentPayloads } from '../recent-payloads/list-recent-payloads.ts';
import type { RecentPayload } from '../recent-payloads/recent-payload-codec.ts';
import { ROLE_SCOPES, roleAllows, type DefinitionRecord } from '../tenancy/types.ts';
import type { ConsoleContext } from './console-context.ts';
import { assertSameOrigin, assertToken } from './security.ts';
import type { ConsoleSession } from './sessions.ts';
import {
  definitionBody,
  definitionsBody,
  type DraftProblem,
  type EditorModel,
  type VersionRow,
} from './views/definitions-view.ts';
import { paths } from './views/format.ts';

/** Refusals shown on the editor's own page, with their code, the form kept. */
const EDITOR_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'FORBIDDEN',
  'RATE_LIMITED',
  'WORKBENCH_BUSY',
  'INVALID_INPUT',
  'INVALID_ATTRIBUTE',
  'MISSING_ATTRIBUTE',
  'CONFLICT',
  'VERSION_NOT_FOUND',
  'DEVICE_NOT_FOUND',
  'PAYLOAD_TOO_LARGE',
  'UNAVAILABLE',
]);

/** What a change did, shown after its redirect (`?done=`). */
const DONE: Record<string, (v: string) => string> = {
  saved: (v) => `Saved version ${v} as a draft: devices go on with the published version.`,
  published: (v) => `Published version ${v}: every payload accepted from now on is processed by it.`,
  'rolled-back': (v) => `Rolled back to version ${v}: every payload accepted from now on is processed by it.`,
};

/** A draft check's JSON body at most (a definition and its parser). */
const CHECK_LIMIT = '2mb';

export function definitionRoutes(router: Router, ctx: ConsoleContext): void {
  const { deps } = ctx;
  const trials = ctx.workbench.trials({
    store: deps.tenancy,
    redis: deps.redis,
    keys: deps.keys,
    replayLimit: Math.min(
      MAX_REPLAY_PAYLOADS,
      deps.config.workbenchRunsPerMinutePerSession,
      deps.config.workbenchRunsPerMinutePerEnv,
    ),
  });

  /** The session as a caller of the management operations: its user, with its role's scopes. */
  const callerOf = (session: ConsoleSession): Caller => ({
    env: session.env,
    actor: session.username,
    scopes: ROLE_SCOPES[session.role],
    nowMs: ctx.clock(),
  });

  async function manage<T>(
    session: ConsoleSession,
    path: string,
    input: Record<string, unknown>,
  ): Promise<T> {
    if (!deps.management) throw new AppError('UNAVAILABLE', 'This console cannot change definitions.');
    return (await deps.management.run(path, callerOf(session), input)) as T;
  }

  router.get('/definitions', async (req, res) => {
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    const [definitions, devices] = await Promise.all([
      deps.tenancy.listDefinitions(session.env),
      deps.tenancy.listDevices(session.env),
    ]);
    const counts = new Map<string, number>();
    for (const d of devices) {
      const k = `${d.definitionIsPublic ? 'public' : 'private'}\n${d.definitionName}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    ctx.render(res, 200, {
      title: 'Definitions',
      session,
      active: 'definitions',
      body: definitionsBody(definitions, counts),
    });
  });

  async function definitionOf(session: ConsoleSession, req: Request): Promise<DefinitionRecord> {
    const scope = String(req.params.scope);
    const name = String(req.params.name);
    const definition =
      scope === 'public' || scope === 'private'
        ? await deps.tenancy.getDefinition(session.env, name, scope === 'public')
        : null;
    if (!definition)
      throw new AppError('DEFINITION_NOT_FOUND', `This environment has no definition ${name}.`);
    return definition;
  }

  /** The versions list, newest first (none without the management operations). */
  async function versionsOf(session: ConsoleSession, d: DefinitionRecord): Promise<VersionRow[]> {
    if (!deps.management) return [];
    return manage<VersionRow[]>(session, '/definitions/versions', {
      definitionName: d.spec.name,
      definitionIsPublic: d.isPublic,
    });
  }

  /** A stored version's texts; the published one's without the management operations. */
  async function versionText(session: ConsoleSession, d: DefinitionRecord, version: number) {
    if (!deps.management || version === d.version)
      return { version: d.version, yaml: definitionYaml(d.spec), parserSource: d.parserSource };
    const v = await manage<{ version: number; definition: string; parserSource: string }>(
      session,
      '/definitions/get',
      { definitionName: d.spec.name, definitionIsPublic: d.isPublic, version },
    );
    return { version: v.version, yaml: v.definition, parserSource: v.parserSource };
  }

  /** The definition's devices, the chosen one, the data points each overrides, its recent payloads. */
  async function devicesOf(session: ConsoleSession, d: DefinitionRecord, wanted: string | undefined) {
    const devices = (await deps.tenancy.listDevices(session.env)).filter(
      (x) => x.definitionName === d.spec.name && x.definitionIsPublic === d.isPublic,
    );
    // None asked: the first device; '' (No device chosen): none.
    const device =
      wanted === undefined
        ? devices[0]?.deviceName
        : devices.some((x) => x.deviceName === wanted)
          ? wanted
          : undefined;
    // The rules a device applies: its override where it has one (as /thresholds/get tells).
    const settings =
      devices.length > 0
        ? await deps.tenancy.getDeviceSettings(
            session.env,
            devices.map((x) => x.deviceName),
          )
        : [];
    const overrides = new Map<string, string[]>();
    devices.forEach((x, i) => {
      const sensors = [...(settings[i]?.overrides.keys() ?? [])].filter((s) =>
        d.spec.dataPoints.some((p) => p.name === s),
      );
      if (sensors.length > 0) overrides.set(x.deviceName, sensors.sort());
    });
    const recent = device ? await listRecentPayloads(deps.redis, deps.keys, session.env, device) : [];
    return { devices, device, overrides, recent };
  }

  type Shown = Omit<EditorModel, 'nowMs' | 'assets' | 'session' | 'definition'>;

  function show(res: Response, status: number, session: ConsoleSession, d: DefinitionRecord, m: Shown): void {
    ctx.render(res, status, {
      title: d.spec.name,
      session,
      active: 'definitions',
      body: definitionBody({ ...m, session, definition: d, nowMs: ctx.clock(), assets: ctx.assets.editor }),
    });
  }

  router.get('/definitions/:scope/:name', async (req, res) => {
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    const d = await definitionOf(session, req);
    const q = ctx.queryOf(req);
    const askedVersion = Number(q.get('version'));
    const [text, versions, picked] = await Promise.all([
      versionText(session, d, Number.isInteger(askedVersion) && askedVersion > 0 ? askedVersion : d.version),
      versionsOf(session, d),
      devicesOf(session, d, q.get('device') ?? undefined),
    ]);
    const wanted = q.get('payload');
    const payload = trialText(d, picked.recent.find((p) => p.ingestId === wanted) ?? picked.recent[0]);
    const done = q.get('done');
    const flash = done && DONE[done] ? DONE[done](q.get('v') ?? '') : undefined;
    show(res, 200, session, d, {
      shownVersion: text.version,
      yaml: text.yaml,
      parserSource: text.parserSource,
      versions,
      manageable: deps.management !== undefined,
      ...picked,
      payload,
      flash,
    });
  });

  router.post('/definitions/:scope/:name', async (req, res) => {
    assertSameOrigin(req, deps.config.publicUrl);
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    assertToken(req, session.csrf);
    const d = await definitionOf(session, req);
    const body = req.body as Record<string, unknown>;
    // A browser sends a text area's lines ended by CRLF: the texts are kept as they were typed.
    const text = (name: string): string => {
      const v = body[name];
      return typeof v === 'string' ? v.replace(/\r\n?/g, '\n') : '';
    };
    const action = text('action');
    const asked = Number(text('version'));
    const storedVersion = Number.isInteger(asked) && asked > 0 ? asked : null;
    // A version's own form (Roll back, Publish) carries no texts: the editor shows that version again.
    const posted = 'definition' in body || 'parserSource' in body;
    const [picked, versions, stored] = await Promise.all([
      devicesOf(session, d, 'device' in body ? text('device') : undefined),
      versionsOf(session, d),
      posted ? null : versionText(session, d, storedVersion ?? d.version),
    ]);
    // What the editor held: its texts, the stored version they are unless edited.
    const yaml = stored ? stored.yaml : text('definition');
    const parserSource = stored ? stored.parserSource : text('parserSource');
    const edited = stored
      ? false
      : storedVersion === null ||
        (await versionText(session, d, storedVersion).then(
          (v) => v.yaml !== yaml || v.parserSource !== parserSource,
          () => true,
        ));
    // Load: the payload picked among the device's recent ones (another device's: its newest).
    const loaded =
      action === 'load'
        ? trialText(d, picked.recent.find((p) => p.ingestId === text('payloadId')) ?? picked.recent[0])
        : undefined;
    const base: Shown = {
      shownVersion: edited ? null : (stored?.version ?? storedVersion),
      yaml,
      parserSource,
      versions,
      manageable: deps.management !== undefined,
      ...picked,
      payload: loaded ?? text('payload'),
    };
    try {
      const shown = await editorAction(session, d, action, {
        yaml,
        parserSource,
        edited,
        storedVersion,
        payload: base.payload,
        device: picked.device,
        note: text('note'),
        revision: text('revision'),
      });
      if ('redirect' in shown) {
        res.redirect(303, shown.redirect);
        return;
      }
      show(res, shown.status, session, d, { ...base, ...shown.model });
    } catch (err) {
      if (!isAppError(err) || !EDITOR_REFUSALS.has(err.code)) throw err;
      if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      const problem = problemOf(err);
      show(res, err.status, session, d, {
        ...base,
        ...(problem ? { problem } : { error: err.message, errorCode: err.code }),
      });
    }
  });

  /** The editor's check as you type: /definitions/check on the draft, answered as JSON. */
  router.post('/definitions/:scope/:name/check', express.json({ limit: CHECK_LIMIT }), async (req, res) => {
    try {
      assertSameOrigin(req, deps.config.publicUrl);
      const session = await ctx.sessionOf(req);
      if (!session) throw new AppError('UNAUTHORIZED', 'Your session has ended: sign in again.');
      assertToken(req, session.csrf);
      await definitionOf(session, req);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const input = {
        definition: typeof body.definition === 'string' ? body.definition : '',
        parserSource: typeof body.parserSource === 'string' ? body.parserSource : '',
      };
      const data = deps.management
        ? await manage(session, '/definitions/check', input)
        : (() => {
            const { problems } = checkDraft(input.definition, input.parserSource);
            return { ok: problems.length === 0, problems };
          })();
      res.json({ status: 'success', data });
    } catch (err) {
      const e = isAppError(err) ? err : new AppError('INTERNAL', 'The check failed.');
      res.status(e.status).json({ status: 'error', error: { code: e.code, message: e.message } });
    }
  });

  /** Runs, replays or changes as asked; the page's status and what it shows besides the form, or where to go. */
  async function editorAction(
    session: ConsoleSession,
    d: DefinitionRecord,
    action: string,
    f: {
      yaml: string;
      parserSource: string;
      edited: boolean;
      storedVersion: number | null;
      payload: string;
      device: string | undefined;
      note: string;
      revision: string;
    },
  ): Promise<{ status: number; model: Partial<EditorModel> } | { redirect: string }> {
    const name = d.spec.name;
    const page = paths.definition(d.isPublic, name);
    const caller = { env: session.env, key: session.secretHash };
    const revision = /^\d+$/.test(f.revision) ? Number(f.revision) : undefined;
    const note = f.note.trim() === '' ? undefined : f.note.trim();
    if (action === 'load') return { status: 200, model: {} };
    // A run costs the API process CPU time: looking is for everyone, running for operators.
    if (!roleAllows(session.role, 'write'))
      throw new AppError('FORBIDDEN', 'Your role may look at definitions but not run or change them.');
    if (d.isPublic && action !== 'run')
      throw new AppError(
        'FORBIDDEN',
        'A public definition is the server’s: it is changed with vigil definition apply --public.',
      );
    if (action === 'run') {
      const report = await trials.run(caller, codeOf(d, f), { payload: f.payload, deviceName: f.device });
      return { status: 200, model: { run: report } };
    }
    if (action === 'replay') {
      const spec = draftOf(d, f.yaml, f.parserSource);
      const replay = await trials.replay(caller, draftCode(spec, f.parserSource));
      return { status: 200, model: { replay } };
    }
    if (action === 'save' || action === 'publish') {
      draftOf(d, f.yaml, f.parserSource);
      const r = await manage<{ version: number; published: number; created: boolean }>(
        session,
        '/definitions/apply',
        {
          definition: f.yaml,
          parserSource: f.parserSource,
          publish: action === 'publish',
          note,
          revision,
        },
      );
      const done = action === 'publish' ? 'published' : 'saved';
      const shown = action === 'publish' ? r.published : r.version;
      return {
        redirect: `${page}?done=${done}&v=${shown}${action === 'save' ? `&version=${r.version}` : ''}`,
      };
    }
    if (action === 'rollback' || action === 'publish-version') {
      if (f.storedVersion === null)
        throw new AppError('INVALID_INPUT', 'Choose the version to publish.', {
          details: { attribute: 'version' },
        });
      const r = await manage<{ published: number }>(
        session,
        action === 'rollback' ? '/definitions/rollback' : '/definitions/publish',
        { definitionName: name, version: f.storedVersion, note, revision },
      );
      return {
        redirect: `${page}?done=${action === 'rollback' ? 'rolled-back' : 'published'}&v=${r.published}`,
      };
    }
    throw new AppError('INVALID_INPUT', 'There is no such action here.');
  }

  /** What a Run runs: the published version when the editor holds it unchanged (or it is public), else the draft. */
  function codeOf(
    d: DefinitionRecord,
    f: { yaml: string; parserSource: string; edited: boolean; storedVersion: number | null },
  ): TrialCode {
    if (d.isPublic || (!f.edited && (f.storedVersion ?? d.version) === d.version))
      return storedCode(d.spec, d.parserSource, d.isPublic, d.version);
    return draftCode(draftOf(d, f.yaml, f.parserSource), f.parserSource);
  }
}

/**
 * What the editor tries a recent payload as: what its parser received, or for a device codec the
 * network server's whole message (its port, receive time and radio metadata with the bytes).
 */
function trialText(d: DefinitionRecord, p: RecentPayload | undefined): string {
  if (!p) return '';
  return d.spec.parserFormat === 'ts013' && p.raw !== undefined ? p.raw : p.payload;
}

/** The draft's spec, checked: INVALID_INPUT with where its problem is; its name must be the page's. */
function draftOf(d: DefinitionRecord, yaml: string, parserSource: string) {
  const spec = draftSpec(yaml);
  checkDraftParser(parserSource, `${spec.name}.js`, spec.parserFormat);
  if (spec.name !== d.spec.name)
    throw new AppError(
      'INVALID_INPUT',
      `the draft is named ${spec.name}: a definition is not renamed here (its name is ${d.spec.name})`,
      { details: { part: 'definition', line: 1, column: 1 } },
    );
  return spec;
}

/** An INVALID_INPUT of the draft as the editor marks it: its part and place. */
function problemOf(err: AppError): DraftProblem | undefined {
  if (err.code !== 'INVALID_INPUT') return undefined;
  const details = (err.details ?? {}) as { part?: string; line?: number | null; column?: number | null };
  if (details.part !== 'definition' && details.part !== 'parser') return undefined;
  return {
    part: details.part,
    code: err.code,
    message: err.message,
    line: details.line ?? null,
    column: details.column ?? null,
  };
}
