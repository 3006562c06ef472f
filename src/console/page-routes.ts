/**
 * The console's pages of an environment — fleet, device, alarms (with Acknowledge), events,
 * ingestion log — and their live streams. Every read is of the session's environment; a name
 * from the URL is looked up there only, so another environment's device is simply not found.
 */
import type { Request, Response, Router } from 'express';
import type { ServedAlarm } from '../alerting/alarms.ts';
import { listEvents } from '../events/list-events.ts';
import { AppError } from '../errors/app-error.ts';
import type { ConsoleContext } from './console-context.ts';
import { readCharts } from './device-charts.ts';
import { readDevice } from './device-data.ts';
import { ingestLogOf, readIngestPage } from './ingestion-data.ts';
import type { LiveView } from './live.ts';
import { assertSameOrigin, assertToken } from './security.ts';
import type { ConsoleSession } from './sessions.ts';
import { alarmsBody, alarmsRegions } from './views/alarms-view.ts';
import { deviceBody, deviceRegions, type DeviceModel } from './views/device-view.ts';
import { eventParams, eventsBody, eventsRegions, parseEventFilter, type EventFilter } from './views/events-view.ts';
import { labelFilterText } from './views/label-filter.ts';
import {
  fleetBody,
  fleetKey,
  fleetParams,
  fleetQuery,
  fleetRegions,
  parseFleetFilter,
  parseFleetPosition,
  type FleetFilter,
  type FleetPosition,
} from './views/fleet-view.ts';
import { readFleetPage, readFleetSummary } from './fleet-data.ts';
import { paths, query } from './views/format.ts';
import { notice } from './views/layout.ts';
import {
  ingestionBody,
  ingestionRegions,
  ingestParams,
  parseIngestFilter,
  parseIngestPage,
} from './views/ingestion-view.ts';

/** Live streams one session may hold open. */
const MAX_STREAMS_PER_SESSION = 6;
import type { Region } from './views/regions.ts';
import { roleAllows } from '../tenancy/types.ts';
import { devicesWithLabels } from '../tenancy/tenancy-store.ts';
import type { DeviceRulesView } from '../management/threshold-operations.ts';
import { isRefusal, runAs } from './manage-forms.ts';
import { rulesSection } from './views/rules-view.ts';
import { html } from './html.ts';

/** An admin's actions on a device page. */
const deviceActions = (name: string) =>
  html`<div class="page-actions device-actions"><a class="btn btn-small" href="${paths.editDevice(name)}">Edit device</a><a class="btn btn-small btn-danger-ghost" href="${paths.deleteDevice(name)}">Delete device</a></div>`;

const EVENTS_SHOWN = 200;
/** Chart data of a device is read again at most this often (InfluxDB queries). */
const CHARTS_MIN_AGE_MS = 5000;

/** Device names the events page's device field suggests. */
const DEVICE_SUGGESTIONS = 1000;

export function pageRoutes(router: Router, ctx: ConsoleContext): void {
  const { deps, live } = ctx;
  const now = () => ctx.clock();

  /** A GET page: the session (or a redirect to sign-in), then `render`. */
  const get =
    (render: (req: Request, res: Response, session: ConsoleSession) => Promise<void>) =>
    async (req: Request, res: Response) => {
      const session = await ctx.requireSession(req, res);
      if (session) await render(req, res, session);
    };

  /** The page's live URL with the baseline of what it was rendered with. */
  const liveUrl = (view: string, params: Record<string, string | undefined>, regions: Region[]) =>
    paths.live + query({ view, ...params, base: live.baseline(regions) });

  // Fleet: a page of it, read with the summary every page of the environment shares.
  const fleetSummaryOf = (env: string) =>
    live.shared(env, 'fleet-summary', () => readFleetSummary(deps.redis, deps.keys, env, now()));
  const fleetPageOf = (env: string, filter: FleetFilter, position: FleetPosition) =>
    live.shared(env, `fleet-page\n${fleetKey(filter, position)}`, async () =>
      readFleetPage(deps, await fleetSummaryOf(env), fleetQuery(filter, position), now()),
    );
  const fleetRegionsOf = async (env: string, filter: FleetFilter, position: FleetPosition) =>
    fleetRegions(await fleetPageOf(env, filter, position), filter, now());
  router.get(
    '/fleet',
    get(async (req, res, session) => {
      const q = ctx.queryOf(req);
      const [filter, position] = [parseFleetFilter(q), parseFleetPosition(q)];
      const page = await fleetPageOf(session.env, filter, position);
      const regions = fleetRegions(page, filter, now());
      ctx.render(res, 200, {
        title: 'Fleet',
        session,
        active: 'fleet',
        body: fleetBody(page, filter, now(), manages(session)),
        live: liveUrl('fleet', fleetParams(filter, position), regions),
      });
    }),
  );
  router.get(
    '/fleet.json',
    get(async (req, res, session) => {
      const q = ctx.queryOf(req);
      const page = await fleetPageOf(session.env, parseFleetFilter(q), parseFleetPosition(q));
      // The summary without its index by name (a Map, which JSON cannot hold).
      const { attentionOf: _index, ...summary } = page.summary;
      res.json({ status: 'success', data: { ...page, summary } });
    }),
  );

  /** Whether the session's user manages the environment here (admin, with the operations at hand). */
  const manages = (session: ConsoleSession) => deps.management !== undefined && roleAllows(session.role, 'admin');

  // Device.
  /** The device's rules per data point (/thresholds/get); null without a definition or operations. */
  async function rulesOf(session: ConsoleSession, deviceName: string): Promise<DeviceRulesView | null> {
    if (!deps.management) return null;
    try {
      return await runAs<DeviceRulesView>(ctx, session, '/thresholds/get', { deviceName });
    } catch (err) {
      if (isRefusal(err)) return null;
      throw err;
    }
  }
  async function deviceModel(session: ConsoleSession, name: string): Promise<DeviceModel | null> {
    const env = session.env;
    const view = await live.shared(env, `device\n${name}`, () => readDevice(deps, env, name, now()));
    if (!view) return null;
    const charts = await live.shared(
      env,
      `charts\n${name}`,
      () => readCharts({ ...deps, last24Hours: ctx.last24Hours }, env, view, now()),
      { minAgeMs: CHARTS_MIN_AGE_MS },
    );
    return { view, charts, session, nowMs: now() };
  }
  router.get(
    '/devices/:name',
    get(async (req, res, session) => {
      const name = String(req.params.name);
      const m = await deviceModel(session, name);
      if (!m) throw new AppError('DEVICE_NOT_FOUND', `This environment has no device ${name}.`);
      const regions = deviceRegions(m);
      const rules = await rulesOf(session, name);
      ctx.render(res, 200, {
        title: m.view.device.displayName,
        session,
        active: 'fleet',
        body: deviceBody(m, flashOf(req), {
          rules: rules ? rulesSection(rules, session) : undefined,
          actions: manages(session) ? deviceActions(name) : undefined,
        }),
        live: liveUrl('device', { device: name }, regions),
        charts: m.view.points.some((p) => p.chart !== null),
      });
    }),
  );

  // Events.
  const eventsOf = (env: string, f: EventFilter) =>
    live.shared(env, `events\n${f.status ?? ''}\n${f.category ?? ''}\n${f.device ?? ''}\n${labelFilterText(f.labels) ?? ''}`, async () =>
      listEvents(deps.redis, deps.keys, {
        env,
        limit: EVENTS_SHOWN,
        eventStatus: f.status,
        eventCategory: f.category,
        ...(f.device === undefined ? {} : { device: f.device }),
        // The devices with the labels, from the fleet every page shares (as /events/list finds them).
        ...(f.labels === undefined ? {} : { devices: await labelledDevices(env, f.labels) }),
      }),
    );
  const labelledDevices = (env: string, labels: Readonly<Record<string, string>>) =>
    devicesWithLabels(ctx.deps.tenancy, env, labels);
  router.get(
    '/events',
    get(async (req, res, session) => {
      const filter = parseEventFilter(ctx.queryOf(req));
      // The device field suggests the first names (any name may be typed): not a fleet's 100,000.
      const [events, suggested] = await Promise.all([
        eventsOf(session.env, filter),
        ctx.deps.tenancy.pageDevices(session.env, { limit: DEVICE_SUGGESTIONS }),
      ]);
      const regions = eventsRegions(events, now());
      const names = suggested.devices.map((d) => d.deviceName);
      ctx.render(res, 200, {
        title: 'Events',
        session,
        active: 'events',
        body: eventsBody(events, filter, names, now()),
        live: liveUrl('events', eventParams(filter), regions),
      });
    }),
  );

  // Alarms.
  const alarmsOf = (env: string): Promise<ServedAlarm[]> => live.shared(env, 'alarms', () => ctx.alarms.list(env));
  router.get(
    '/alarms',
    get(async (req, res, session) => {
      const alarms = await alarmsOf(session.env);
      ctx.render(res, 200, {
        title: 'Alarms',
        session,
        active: 'alarms',
        body: alarmsBody(alarms, session, now(), flashOf(req)),
        live: liveUrl('alarms', {}, alarmsRegions(alarms, session, now())),
      });
    }),
  );
  router.post('/alarms/acknowledge', async (req, res) => {
    assertSameOrigin(req, deps.config.publicUrl);
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    assertToken(req, session.csrf);
    if (!roleAllows(session.role, 'write'))
      throw new AppError('FORBIDDEN', 'Your role may look at alarms but not acknowledge them.');
    const body = req.body as Record<string, unknown>;
    const text = (name: string): string => {
      const v = body[name];
      return typeof v === 'string' ? v : '';
    };
    const sensorName = text('sensorName');
    const note = text('note').trim();
    await ctx.alarms.acknowledge({
      env: session.env,
      deviceName: text('deviceName'),
      sensorName: sensorName === '' ? undefined : sensorName,
      note: note === '' ? undefined : note.slice(0, 1000),
      actor: session.username,
      nowMs: now(),
    });
    live.changed(session.env);
    const returnTo = text('returnTo');
    const back = returnTo.startsWith('/console/') && !returnTo.startsWith('/console//') ? returnTo : paths.alarms;
    res.redirect(303, `${back}${back.includes('?') ? '&' : '?'}done=acknowledged`);
  });

  // Ingestion log.
  router.get(
    '/ingestion',
    get(async (req, res, session) => {
      const q = ctx.queryOf(req);
      const [filter, request] = [parseIngestFilter(q), parseIngestPage(q)];
      const [page, all] = await Promise.all([
        readIngestPage(ctx, session.env, filter, request),
        ingestLogOf(ctx, session.env),
      ]);
      const codes = [...new Set(all.flatMap((e) => (e.code ? [e.code] : [])))].sort();
      const regions = ingestionRegions(page, filter, request, now());
      ctx.render(res, 200, {
        title: 'Ingestion log',
        session,
        active: 'ingestion',
        body: ingestionBody(page, filter, request, codes, now()),
        live: liveUrl('ingestion', ingestParams(filter, request), regions),
      });
    }),
  );

  // Live streams.
  router.get('/live', async (req, res) => {
    const session = await ctx.sessionOf(req, { renew: false });
    if (!session) {
      // EventSource does not reconnect after 204: the page reloads and meets the sign-in.
      res.status(204).end();
      return;
    }
    if (live.streamsOf(session.secretHash) >= MAX_STREAMS_PER_SESSION)
      throw new AppError('TOO_MANY_STREAMS', 'Too many live pages are open in this session: close some.');
    const q = ctx.queryOf(req);
    const view = liveView(session, q);
    if (!view) throw new AppError('NOT_FOUND', 'No such live view.');
    const cookie = ctx.cookies.read(req, ctx.cookies.sessionName(req));
    live.stream({
      env: session.env,
      sessionKey: session.secretHash,
      res,
      view,
      baseline: q.get('base') ?? undefined,
      sessionValid: async () => (await ctx.sessions.resolve(cookie, now(), { renew: false })) !== null,
    });
  });

  function liveView(session: ConsoleSession, q: URLSearchParams): LiveView | undefined {
    const env = session.env;
    switch (q.get('view') ?? '') {
      case 'fleet': {
        const [filter, position] = [parseFleetFilter(q), parseFleetPosition(q)];
        return { regions: () => fleetRegionsOf(env, filter, position) };
      }
      case 'device': {
        const name = q.get('device') ?? '';
        return {
          regions: async () => {
            const m = await deviceModel(session, name);
            return m ? deviceRegions(m) : [];
          },
        };
      }
      case 'events': {
        const filter = parseEventFilter(q);
        return { regions: async () => eventsRegions(await eventsOf(env, filter), now()) };
      }
      case 'alarms':
        return { regions: async () => alarmsRegions(await alarmsOf(env), session, now()) };
      case 'ingestion': {
        const [filter, request] = [parseIngestFilter(q), parseIngestPage(q)];
        return {
          regions: async () =>
            ingestionRegions(await readIngestPage(ctx, env, filter, request), filter, request, now()),
        };
      }
      default:
        return undefined;
    }
  }
}

function flashOf(req: Request) {
  const done = new URL(req.originalUrl, 'http://console').searchParams.get('done');
  return done === 'acknowledged' ? notice('ok', 'Alarm acknowledged.') : undefined;
}
