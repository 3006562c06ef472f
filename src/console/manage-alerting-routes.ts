/**
 * The console's channels and routes (admins): create, delete after a confirmation, and a test
 * notification through the real delivery path with the receiver's answer. A webhook's signing
 * secret is shown once, in the answer to the form that made it.
 */
import type { Router } from 'express';
import type { ChannelView } from '../alerting/channel-admin.ts';
import type { RouteView } from '../alerting/route-admin.ts';
import { AppError } from '../errors/app-error.ts';
import type { ConsoleContext } from './console-context.ts';
import { adminPage, labelRowsOf, labelsOf, postForm, runAs, type FormRequest } from './manage-forms.ts';
import type { ConsoleSession } from './sessions.ts';
import { paths } from './views/format.ts';
import {
  alertingBody,
  channelSecretShown,
  deleteChannelBody,
  deleteRouteBody,
  type ChannelFormValues,
  type ChannelTestResult,
  type RouteFormValues,
} from './views/manage-alerting-view.ts';

export function manageAlertingRoutes(router: Router, ctx: ConsoleContext): void {
  const channelsOf = (s: ConsoleSession) => runAs<ChannelView[]>(ctx, s, '/channels/list', {});
  const routesOf = (s: ConsoleSession) => runAs<RouteView[]>(ctx, s, '/routes/list', {});
  const page = async (
    f: Pick<FormRequest, 'session' | 'show'>,
    status: number,
    o: Omit<Parameters<typeof alertingBody>[0], 'session' | 'channels' | 'routes'> = {},
  ) => {
    const [channels, routes] = await Promise.all([channelsOf(f.session), routesOf(f.session)]);
    f.show(status, 'Channels and routes', alertingBody({ session: f.session, channels, routes, ...o }));
  };

  adminPage(router, ctx, '/manage/alerting', async (_req, res, session) => {
    const [channels, routes] = await Promise.all([channelsOf(session), routesOf(session)]);
    ctx.render(res, 200, {
      title: 'Channels and routes',
      session,
      active: 'manage',
      body: alertingBody({ session, channels, routes }),
    });
  });

  // Channels.
  postForm(router, ctx, '/manage/alerting/channels/create', {
    async submit(f) {
      const v = channelValues(f);
      const created = await f.run<{ name: string; secret?: string }>('/channels/create', channelInput(v));
      if (created.secret === undefined)
        return { redirect: paths.alerting, flash: `Channel ${created.name} created.` };
      await page(f, 200, { shown: channelSecretShown(created.name, created.secret) });
      return 'shown';
    },
    again: (f, error) => page(f, error.status, { error, channel: channelValues(f) }),
  });
  postForm(router, ctx, '/manage/alerting/channels/test', {
    async submit(f) {
      const test = await f.run<ChannelTestResult>('/channels/test', { name: f.text('name') });
      await page(f, 200, { test });
      return 'shown';
    },
    again: (f, error) => page(f, error.status, { error }),
  });
  const channelOf = async (s: ConsoleSession, name: string) => {
    const channel = (await channelsOf(s)).find((c) => c.name === name);
    if (!channel) throw new AppError('CHANNEL_NOT_FOUND', `This environment has no channel ${name}.`);
    return channel;
  };
  adminPage(router, ctx, '/manage/alerting/channels/:name/delete', async (req, res, session) => {
    const c = await channelOf(session, String(req.params.name));
    ctx.render(res, 200, {
      title: `Delete ${c.name}`,
      session,
      active: 'manage',
      body: deleteChannelBody(session, c),
    });
  });
  postForm(router, ctx, '/manage/alerting/channels/:name/delete', {
    async submit(f) {
      const name = String(f.req.params.name);
      await f.run('/channels/delete', { name });
      return { redirect: paths.alerting, flash: `Channel ${name} deleted.` };
    },
    async again(f, error) {
      const c = await channelOf(f.session, String(f.req.params.name));
      f.show(error.status, `Delete ${c.name}`, deleteChannelBody(f.session, c, error));
    },
  });

  // Routes.
  postForm(router, ctx, '/manage/alerting/routes/create', {
    async submit(f) {
      const v = routeValues(f);
      const created = await f.run<RouteView>('/routes/create', routeInput(v));
      return { redirect: paths.alerting, flash: `Route ${created.name} created: ${created.filter}.` };
    },
    again: (f, error) => page(f, error.status, { error, route: routeValues(f) }),
  });
  const routeOf = async (s: ConsoleSession, name: string) => {
    const route = (await routesOf(s)).find((r) => r.name === name);
    if (!route) throw new AppError('ROUTE_NOT_FOUND', `This environment has no route ${name}.`);
    return route;
  };
  adminPage(router, ctx, '/manage/alerting/routes/:name/delete', async (req, res, session) => {
    const r = await routeOf(session, String(req.params.name));
    ctx.render(res, 200, {
      title: `Delete ${r.name}`,
      session,
      active: 'manage',
      body: deleteRouteBody(session, r),
    });
  });
  postForm(router, ctx, '/manage/alerting/routes/:name/delete', {
    async submit(f) {
      const name = String(f.req.params.name);
      await f.run('/routes/delete', { name });
      return { redirect: paths.alerting, flash: `Route ${name} deleted.` };
    },
    async again(f, error) {
      const r = await routeOf(f.session, String(f.req.params.name));
      f.show(error.status, `Delete ${r.name}`, deleteRouteBody(f.session, r, error));
    },
  });
}

function channelValues(f: FormRequest): ChannelFormValues {
  return {
    name: f.text('name'),
    type: f.text('type'),
    url: f.text('url'),
    headers: f.text('headers', { raw: true }),
    to: f.text('to'),
  };
}

/** The channel's attributes: only those its type takes, so that an empty field is no attribute. */
function channelInput(v: ChannelFormValues): Record<string, unknown> {
  const input: Record<string, unknown> = { name: v.name, type: v.type };
  if (v.url !== '') input.url = v.url;
  const headers = headersOf(v.headers);
  if (Object.keys(headers).length > 0) input.headers = headers;
  const to = v.to
    .split(/[,;\s]+/)
    .map((a) => a.trim())
    .filter((a) => a !== '');
  if (to.length > 0) input.to = to;
  return input;
}

/** `Name: value` lines as headers; INVALID_INPUT for a line that is not one. */
function headersOf(text: string): Record<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon < 1)
      throw new AppError(
        'INVALID_INPUT',
        `The header line ${JSON.stringify(line.trim())} is not Name: value.`,
        {
          details: { attribute: 'headers' },
        },
      );
    out.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return Object.fromEntries(out);
}

function routeValues(f: FormRequest): RouteFormValues {
  return {
    name: f.text('name'),
    channels: f.all('channels'),
    category: f.text('category'),
    minStatus: f.text('minStatus'),
    device: f.text('device'),
    sensor: f.text('sensor'),
    labels: labelRowsOf(f),
    includeSuccess: f.text('includeSuccess') === 'true',
    remindEvery: f.text('remindEvery'),
    quietHours: f.text('quietHours'),
    timeZone: f.text('timeZone'),
  };
}

/** The route's attributes: the fields filled in. */
function routeInput(v: RouteFormValues): Record<string, unknown> {
  const labels = labelsOf(v.labels);
  const optional = {
    category: v.category,
    minStatus: v.minStatus,
    device: v.device,
    sensor: v.sensor,
    remindEvery: v.remindEvery,
    quietHours: v.quietHours,
    timeZone: v.timeZone,
  };
  return {
    name: v.name,
    channels: v.channels,
    ...Object.fromEntries(Object.entries(optional).filter(([, x]) => x !== '')),
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
    ...(v.includeSuccess ? { includeSuccess: true } : {}),
  };
}
