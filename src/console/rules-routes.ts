/**
 * A device's threshold override of one data point, edited where the device page shows its rules
 * (admins): the form with the override's revision (a change made meanwhile is a CONFLICT, shown
 * with the rules as they are), and clearing it (back to the definition's rules). `/thresholds/get`
 * says what the page needs; `/thresholds/set` and `/thresholds/clear` make the change.
 */
import type { Router } from 'express';
import { AppError } from '../errors/app-error.ts';
import type { DeviceRulesView } from '../management/threshold-operations.ts';
import type { ConsoleContext } from './console-context.ts';
import { adminPage, postForm, runAs, type FormRequest } from './manage-forms.ts';
import type { ConsoleSession } from './sessions.ts';
import { paths } from './views/format.ts';
import {
  rulesFormBody,
  rulesFormValues,
  rulesInput,
  type RuleRow,
  type RulesFormValues,
} from './views/rules-view.ts';

export function rulesRoutes(router: Router, ctx: ConsoleContext): void {
  async function pointOf(session: ConsoleSession, deviceName: string, sensorName: string) {
    const [rules, device] = await Promise.all([
      runAs<DeviceRulesView>(ctx, session, '/thresholds/get', { deviceName }),
      ctx.deps.tenancy.getDevice(session.env, deviceName),
    ]);
    const point = rules.dataPoints.find((p) => p.sensorName === sensorName);
    if (!point)
      throw new AppError('SENSOR_NOT_FOUND', `Device ${deviceName} has no data point ${sensorName}.`);
    return { point, displayName: device?.displayName ?? deviceName };
  }

  const path = '/devices/:name/rules/:sensor';
  adminPage(router, ctx, path, async (req, res, session) => {
    const [deviceName, sensorName] = [String(req.params.name), String(req.params.sensor)];
    const { point, displayName } = await pointOf(session, deviceName, sensorName);
    const values = rulesFormValues(point.override ?? point.definition, point.override?.revision ?? 0);
    ctx.render(res, 200, {
      title: `Rules of ${point.displayName}`,
      session,
      active: 'fleet',
      body: rulesFormBody({ session, deviceName, displayName, point, values }),
    });
  });
  postForm(router, ctx, path, {
    async submit(f) {
      const [deviceName, sensorName] = [String(f.req.params.name), String(f.req.params.sensor)];
      const { point } = await pointOf(f.session, deviceName, sensorName);
      const v = typed(f);
      await f.run('/thresholds/set', {
        deviceName,
        sensorName,
        rules: rulesInput(v, point.dataType),
        revision: v.revision,
      });
      return {
        redirect: `${paths.device(deviceName)}#device-rules`,
        flash: `${point.displayName}: this device’s own rules are saved.`,
      };
    },
    async again(f, error) {
      const [deviceName, sensorName] = [String(f.req.params.name), String(f.req.params.sensor)];
      const { point, displayName } = await pointOf(f.session, deviceName, sensorName);
      const conflict = error.code === 'CONFLICT';
      const values = conflict
        ? rulesFormValues(point.override ?? point.definition, point.override?.revision ?? 0)
        : typed(f);
      f.show(
        error.status,
        `Rules of ${point.displayName}`,
        rulesFormBody({ session: f.session, deviceName, displayName, point, values, error, conflict }),
        'fleet',
      );
    },
  });
  postForm(router, ctx, `${path}/clear`, {
    async submit(f) {
      const [deviceName, sensorName] = [String(f.req.params.name), String(f.req.params.sensor)];
      await f.run('/thresholds/clear', { deviceName, sensorName });
      return {
        redirect: `${paths.device(deviceName)}#device-rules`,
        flash: `${sensorName}: the override is cleared, the definition’s rules apply again.`,
      };
    },
    async again(f, error) {
      const [deviceName, sensorName] = [String(f.req.params.name), String(f.req.params.sensor)];
      const { point, displayName } = await pointOf(f.session, deviceName, sensorName);
      const values = rulesFormValues(point.override ?? point.definition, point.override?.revision ?? 0);
      f.show(
        error.status,
        `Rules of ${point.displayName}`,
        rulesFormBody({ session: f.session, deviceName, displayName, point, values, error }),
        'fleet',
      );
    },
  });
}

/** The form's rules as typed. */
function typed(f: FormRequest): RulesFormValues {
  const [status, condition, value, forText, description] = [
    f.all('ruleStatus'),
    f.all('ruleCondition'),
    f.all('ruleValue'),
    f.all('ruleFor'),
    f.all('ruleDescription'),
  ];
  const rows: RuleRow[] = value.map((v, i) => {
    const c = condition[i];
    return {
      status: status[i] ?? 'WARNING',
      condition: c === 'below' || c === 'equals' ? c : 'above',
      value: v,
      for: forText[i] ?? '',
      description: description[i] ?? '',
    };
  });
  const revision = Number(f.text('revision'));
  return {
    rows: rows.filter((r) => r.value.trim() !== ''),
    hysteresis: f.text('hysteresis'),
    staleAfter: f.text('staleAfter'),
    staleStatus: f.text('staleStatus') || 'WARNING',
    revision: Number.isInteger(revision) && revision >= 0 ? revision : 0,
  };
}
