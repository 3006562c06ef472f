/**
 * The console's device management (admins): the list, create, edit (with the revision it was
 * based on: a change made meanwhile is a CONFLICT, shown with the current values), delete after a
 * confirmation, import a CSV after its dry run's preview, and export. Every change is a management
 * operation run as the session's user (manage-forms.ts).
 */
import type { Router } from 'express';
import { AppError } from '../errors/app-error.ts';
import type { ImportReport } from '../management/device-import.ts';
import type { ManagedDevice } from '../management/device-shape.ts';
import type { ConsoleContext } from './console-context.ts';
import { adminPage, labelRowsOf, labelsOf, postForm, runAs, type FormRequest } from './manage-forms.ts';
import type { ConsoleSession } from './sessions.ts';
import { paths } from './views/format.ts';
import { labelFilterOf, parseLabelFilter } from './views/label-filter.ts';
import {
  definitionOfValue,
  deleteDeviceBody,
  deviceFormBody,
  deviceListBody,
  formValuesOf,
  importBody,
  type DefinitionChoice,
  type DeviceFormValues,
} from './views/manage-devices-view.ts';

/** Devices per page of the list. */
const DEVICES_PER_PAGE = 100;

export function manageDeviceRoutes(router: Router, ctx: ConsoleContext): void {
  const definitions = (session: ConsoleSession) =>
    runAs<DefinitionChoice[]>(ctx, session, '/definitions/list', {});
  const device = (session: ConsoleSession, deviceName: string) =>
    runAs<ManagedDevice>(ctx, session, '/devices/get', { deviceName });

  adminPage(router, ctx, '/manage', (_req, res) => {
    res.redirect(302, paths.manageDevices);
  });

  adminPage(router, ctx, '/manage/devices', async (req, res, session) => {
    const q = ctx.queryOf(req);
    const labelsText = (q.get('labels') ?? '').trim();
    const parsed = parseLabelFilter(labelsText);
    const labels = labelFilterOf(q);
    const after = q.get('after') ?? undefined;
    const [page, total] = await Promise.all([
      ctx.deps.tenancy.pageDevices(session.env, {
        limit: DEVICES_PER_PAGE,
        ...(after ? { after } : {}),
        ...(labels ? { labels } : {}),
      }),
      ctx.deps.tenancy.countDevices(session.env),
    ]);
    ctx.render(res, 200, {
      title: 'Devices',
      session,
      active: 'manage',
      body: deviceListBody({
        session,
        devices: page.devices,
        total,
        labels,
        labelsError: typeof parsed === 'string' ? parsed : undefined,
        next: page.more ? page.devices.at(-1)?.deviceName : undefined,
        after: after || undefined,
      }),
    });
  });

  // Create.
  const blank: DeviceFormValues = {
    deviceName: '',
    displayName: '',
    definition: '',
    labels: [],
    availabilityMinutes: '',
  };
  adminPage(router, ctx, '/manage/devices/new', async (_req, res, session) => {
    ctx.render(res, 200, {
      title: 'New device',
      session,
      active: 'manage',
      body: deviceFormBody({
        session,
        mode: 'create',
        values: blank,
        definitions: await definitions(session),
      }),
    });
  });
  postForm(router, ctx, '/manage/devices/new', {
    async submit(f) {
      const v = typed(f);
      const created = await f.run<ManagedDevice>('/devices/create', {
        deviceName: v.deviceName,
        ...definitionInput(v.definition),
        ...(v.displayName === '' ? {} : { displayName: v.displayName }),
        labels: labelsOf(v.labels),
        ...(v.availabilityMinutes === '' ? {} : { availabilityMinutes: v.availabilityMinutes }),
      });
      return { redirect: paths.device(created.deviceName), flash: `Device ${created.deviceName} created.` };
    },
    async again(f, error) {
      f.show(
        error.status,
        'New device',
        deviceFormBody({
          session: f.session,
          mode: 'create',
          values: typed(f),
          definitions: await definitions(f.session),
          error,
        }),
      );
    },
  });

  // Edit.
  adminPage(router, ctx, '/manage/devices/:name/edit', async (req, res, session) => {
    const d = await device(session, String(req.params.name));
    ctx.render(res, 200, {
      title: `Edit ${d.displayName}`,
      session,
      active: 'manage',
      body: deviceFormBody({
        session,
        mode: 'edit',
        values: formValuesOf(d),
        definitions: await definitions(session),
      }),
    });
  });
  postForm(router, ctx, '/manage/devices/:name/edit', {
    async submit(f) {
      const deviceName = String(f.req.params.name);
      const v = { ...typed(f), deviceName };
      await f.run('/devices/update', {
        deviceName,
        displayName: v.displayName === '' ? deviceName : v.displayName,
        ...definitionInput(v.definition),
        labels: labelsOf(v.labels),
        availabilityMinutes: v.availabilityMinutes === '' ? null : v.availabilityMinutes,
        ...(f.text('revision') === '' ? {} : { revision: f.text('revision') }),
      });
      return { redirect: paths.device(deviceName), flash: 'Device saved.' };
    },
    async again(f, error) {
      const deviceName = String(f.req.params.name);
      const list = await definitions(f.session);
      if (error.code === 'CONFLICT') {
        // Someone changed it meanwhile: the form shows what it is now, on its current revision.
        const now = await device(f.session, deviceName);
        f.show(
          409,
          `Edit ${now.displayName}`,
          deviceFormBody({
            session: f.session,
            mode: 'edit',
            values: formValuesOf(now),
            definitions: list,
            error,
            conflict: true,
          }),
        );
        return;
      }
      const values = { ...typed(f), deviceName, revision: Number(f.text('revision')) || 1 };
      f.show(
        error.status,
        `Edit ${deviceName}`,
        deviceFormBody({ session: f.session, mode: 'edit', values, definitions: list, error }),
      );
    },
  });

  // Delete, after a confirmation.
  adminPage(router, ctx, '/manage/devices/:name/delete', async (req, res, session) => {
    const d = await device(session, String(req.params.name));
    ctx.render(res, 200, {
      title: `Delete ${d.displayName}`,
      session,
      active: 'manage',
      body: deleteDeviceBody(session, d),
    });
  });
  postForm(router, ctx, '/manage/devices/:name/delete', {
    async submit(f) {
      const deviceName = String(f.req.params.name);
      await f.run('/devices/delete', { deviceName });
      return { redirect: paths.manageDevices, flash: `Device ${deviceName} deleted.` };
    },
    async again(f, error) {
      const d = await device(f.session, String(f.req.params.name));
      f.show(error.status, `Delete ${d.displayName}`, deleteDeviceBody(f.session, d, error));
    },
  });

  // Export: the CSV the import takes.
  adminPage(router, ctx, '/manage/devices/export.csv', async (_req, res, session) => {
    const csv = await runAs<string>(ctx, session, '/devices/export', {});
    res.type('text/csv; charset=utf-8').attachment(`devices-${session.env}.csv`).send(csv);
  });

  // Import: a dry run first, its preview, then the import.
  adminPage(router, ctx, '/manage/devices/import', (_req, res, session) => {
    ctx.render(res, 200, {
      title: 'Import devices',
      session,
      active: 'manage',
      body: importBody({ session, csv: '' }),
    });
  });
  postForm(router, ctx, '/manage/devices/import', {
    async submit(f) {
      const csv = csvOf(f);
      if (csv.trim() === '')
        throw new AppError('INVALID_INPUT', 'Choose a CSV file or paste one.', {
          details: { attribute: 'csv' },
        });
      const body = { text: csv, contentType: 'text/csv' };
      if (f.text('action') !== 'import') {
        const report = await f.run<ImportReport>('/devices/import', { dryRun: true }, body);
        f.show(200, 'Import devices', importBody({ session: f.session, csv, report }));
        return 'shown';
      }
      const report = await f.run<ImportReport>('/devices/import', {}, body);
      return {
        redirect: paths.manageDevices,
        flash: `Imported: ${report.created} created, ${report.updated} changed, ${report.unchanged} unchanged.`,
      };
    },
    again(f, error) {
      const details = error.details as Partial<ImportReport> | undefined;
      const report =
        error.code === 'IMPORT_REJECTED' && details && Array.isArray(details.failed)
          ? ({ ...details, dryRun: true } as ImportReport)
          : undefined;
      f.show(
        error.status,
        'Import devices',
        importBody({ session: f.session, csv: csvOf(f), report, error }),
      );
    },
  });
}

/** The device form's fields as typed. */
function typed(f: FormRequest): DeviceFormValues {
  return {
    deviceName: f.text('deviceName'),
    displayName: f.text('displayName'),
    definition: f.text('definition'),
    labels: labelRowsOf(f),
    availabilityMinutes: f.text('availabilityMinutes'),
  };
}

/** The definition chosen, as attributes; MISSING_ATTRIBUTE when none is. */
function definitionInput(value: string): { definitionName: string; definitionIsPublic: boolean } {
  const d = definitionOfValue(value);
  if (!d)
    throw new AppError('MISSING_ATTRIBUTE', 'Choose the device’s definition.', {
      details: { attribute: 'definitionName' },
    });
  return d;
}

/** The CSV of the import form: the file chosen, else the text pasted. */
const csvOf = (f: FormRequest): string => f.text('csvFile', { raw: true }) || f.text('csv', { raw: true });
