/**
 * Definitions and the parser workbench. A definition is looked up in the session's environment
 * (its private ones) or among the public ones, never another environment's.
 */
import type { Request, Response, Router } from 'express';
import { AppError, isAppError } from '../errors/app-error.ts';
import type { ErrorCode } from '../errors/catalogue.ts';
import type { DefinitionRecord } from '../tenancy/types.ts';
import { listRecentPayloads } from '../recent-payloads/list-recent-payloads.ts';
import type { ConsoleContext } from './console-context.ts';
import { assertSameOrigin, assertToken } from './security.ts';
import type { ConsoleSession } from './sessions.ts';
import { definitionBody, definitionsBody, type WorkbenchModel } from './views/definitions-view.ts';
import { roleAllows } from '../tenancy/types.ts';

/** Longest payload the workbench runs, in characters. */
const MAX_PAYLOAD_CHARS = 256 * 1024;

/** Refusals of a run shown on the workbench's own page, with their code, the form kept. */
const WORKBENCH_REFUSALS: ReadonlySet<ErrorCode> = new Set(['FORBIDDEN', 'RATE_LIMITED', 'WORKBENCH_BUSY']);

export function definitionRoutes(router: Router, ctx: ConsoleContext): void {
  const { deps } = ctx;

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

  async function model(session: ConsoleSession, definition: DefinitionRecord, device: string | undefined) {
    const all = await deps.tenancy.listDevices(session.env);
    const devices = all.filter(
      (d) => d.definitionName === definition.spec.name && d.definitionIsPublic === definition.isPublic,
    );
    const chosen = device !== undefined && devices.some((d) => d.deviceName === device) ? device : undefined;
    return { devices, device: chosen };
  }

  function show(res: Response, status: number, m: Omit<WorkbenchModel, 'nowMs'>): void {
    ctx.render(res, status, {
      title: m.definition.spec.name,
      session: m.session,
      active: 'definitions',
      body: definitionBody({ ...m, nowMs: ctx.clock() }),
    });
  }

  router.get('/definitions/:scope/:name', async (req, res) => {
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    const definition = await definitionOf(session, req);
    const q = ctx.queryOf(req);
    const { devices, device } = await model(session, definition, q.get('device') ?? undefined);
    const chosen = device ?? devices[0]?.deviceName;
    let payload = '';
    if (chosen !== undefined) {
      const recent = await listRecentPayloads(deps.redis, deps.keys, session.env, chosen);
      const wanted = q.get('payload');
      payload = (recent.find((p) => p.ingestId === wanted) ?? recent[0])?.payload ?? '';
    }
    show(res, 200, { definition, devices, session, device: chosen, payload });
  });

  router.post('/definitions/:scope/:name', async (req, res) => {
    assertSameOrigin(req, deps.config.publicUrl);
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    assertToken(req, session.csrf);
    const definition = await definitionOf(session, req);
    const body = req.body as Record<string, unknown>;
    const text = (name: string): string => {
      const v = body[name];
      return typeof v === 'string' ? v : '';
    };
    const { devices, device } = await model(session, definition, text('device') || undefined);
    const payload = text('payload');
    const base = { definition, devices, session, device, payload };
    try {
      // A run costs the API process up to the sandbox's time limit: looking is for everyone, running for operators.
      if (!roleAllows(session.role, 'write'))
        throw new AppError('FORBIDDEN', 'Your role may look at parsers but not run them.');
      const shown = await workbenchAction(session, definition, device, text('action'), payload);
      show(res, shown.status, { ...base, ...shown.model });
    } catch (err) {
      if (!isAppError(err) || !WORKBENCH_REFUSALS.has(err.code)) throw err;
      if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      show(res, err.status, { ...base, error: err.message, errorCode: err.code });
    }
  });

  /** Runs or replays as asked; the page's status and what it shows besides the form. */
  async function workbenchAction(
    session: ConsoleSession,
    definition: DefinitionRecord,
    device: string | undefined,
    action: string,
    payload: string,
  ): Promise<{ status: number; model: Partial<WorkbenchModel> }> {
    const [environment, settings] = await Promise.all([
      deps.tenancy.getEnvironment(session.env),
      device ? deps.tenancy.getDeviceSettings(session.env, [device]).then((s) => s[0]) : undefined,
    ]);
    const trial = {
      env: session.env,
      session: session.secretHash,
      definition,
      locale: environment?.locale ?? 'en',
      settings,
    };
    if (action === 'replay') {
      if (!device)
        return { status: 400, model: { error: 'Choose a device whose recent payloads to replay.' } };
      const recent = await listRecentPayloads(deps.redis, deps.keys, session.env, device);
      return { status: 200, model: { replay: await ctx.workbench.replay(trial, recent) } };
    }
    if (payload.length > MAX_PAYLOAD_CHARS) {
      return {
        status: 413,
        model: { payload: '', error: `The payload is longer than ${MAX_PAYLOAD_CHARS} characters.` },
      };
    }
    return { status: 200, model: { run: await ctx.workbench.run(trial, payload) } };
  }
}
