/**
 * A device's rules where its page shows them: per data point the rules that apply — the device's
 * own override, or its definition's — saying which, with the definition's beside an override, its
 * suppression, and for admins a way to edit or clear the override; and the form that edits one.
 */
import { isNumericDataType } from '../../domain/data-types.ts';
import type { PublicRule, PublicRules } from '../../domain/thresholds.ts';
import type { AppError } from '../../errors/app-error.ts';
import type { DataPointRules, DeviceRulesView } from '../../management/threshold-operations.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths, statusPill } from './format.ts';
import { csrfField, hidden, refusalNotice, utcText } from './manage-view.ts';

/** `above 890 for 10m — Stuffy`: the condition, how long it must hold, its description. */
export function ruleText(r: PublicRule): string {
  const cond =
    r.above !== undefined
      ? `above ${r.above}`
      : r.below !== undefined
        ? `below ${r.below}`
        : `equals ${JSON.stringify(r.equals)}`;
  const held = r.for ? `${cond} for ${r.for}` : cond;
  return r.description ? `${held} — ${r.description}` : held;
}

function rulesList(set: PublicRules): Html {
  if (set.rules.length === 0 && !set.stale) return html`<span class="muted">none</span>`;
  return html`<ul class="rules">${set.rules.map((r) => html`<li>${statusPill(r.status)} ${ruleText(r)}</li>`)}${
    set.stale ? html`<li>${statusPill(set.stale.status)} no value for ${set.stale.after}</li>` : ''
  }</ul>${set.hysteresis ? html`<div class="small muted">hysteresis ${set.hysteresis}</div>` : ''}`;
}

/** The device page's section of rules. */
export function rulesSection(rules: DeviceRulesView, session: ConsoleSession): Html {
  const admin = session.role === 'admin';
  const overridden = rules.dataPoints.filter((p) => p.override !== null).length;
  return html`<section class="card" aria-labelledby="rules-h" id="device-rules">
<h2 id="rules-h">Rules</h2>
<p class="sub">What sets each data point’s status: the device’s own rules where it overrides its definition (${overridden === 0 ? 'none does' : `${overridden} ${overridden === 1 ? 'does' : 'do'}`}), the definition’s otherwise.</p>
<div class="table-wrap"><table class="table device-rules">
<thead><tr><th scope="col">Data point</th><th scope="col">Rules</th><th scope="col">From</th>${admin ? html`<th scope="col">Change</th>` : ''}</tr></thead>
<tbody>${rules.dataPoints.map((p) => ruleRow(rules.deviceName, p, session, admin))}</tbody>
</table></div>
</section>`;
}

function ruleRow(device: string, p: DataPointRules, session: ConsoleSession, admin: boolean): Html {
  const applied = p.override ?? p.definition;
  return html`<tr data-key="${p.sensorName}" data-applies="${p.applies}">
<td data-label="Data point"><span class="strong">${p.displayName}</span><div class="mono muted small">${p.sensorName}</div></td>
<td data-label="Rules">${rulesList(applied)}${
    p.override
      ? html`<div class="small muted definition-rules">Definition: ${definitionText(p.definition)}</div>`
      : ''
  }</td>
<td data-label="From"><span class="stack">${
    p.override
      ? html`<span class="tag tag-override" title="This device’s own rules, not its definition’s">Device override</span>`
      : html`<span class="tag">Definition</span>`
  }${p.suppression ? html`<span class="tag" title="No events while suppressed">suppressed${p.suppression.untilUTC ? ` until ${utcText(p.suppression.untilUTC)}` : ''}</span>` : ''}</span></td>
${
  admin
    ? html`<td data-label="Change"><span class="row-actions"><a class="btn btn-small" href="${paths.deviceRules(device, p.sensorName)}">${p.override ? 'Edit override' : 'Override'}</a>${
        p.override
          ? html`<form class="inline-form" method="post" action="${paths.deviceRulesClear(device, p.sensorName)}">${csrfField(session)}<button type="submit" class="btn btn-small btn-danger-ghost">Clear override</button></form>`
          : ''
      }</span></td>`
    : ''
}
</tr>`;
}

/** The definition's rules in one line. */
function definitionText(set: PublicRules): string {
  const parts = set.rules.map((r) => `${r.status} ${ruleText(r)}`);
  if (set.stale) parts.push(`${set.stale.status} no value for ${set.stale.after}`);
  return parts.length === 0 ? 'none' : parts.join('; ');
}

/** A rule as the form's row holds it. */
export interface RuleRow {
  status: string;
  condition: 'above' | 'below' | 'equals';
  value: string;
  for: string;
  description: string;
}

export interface RulesFormValues {
  rows: RuleRow[];
  hysteresis: string;
  staleAfter: string;
  staleStatus: string;
  /** The override's revision the change is based on (0: none). */
  revision: number;
}

export function rulesFormValues(set: PublicRules, revision: number): RulesFormValues {
  return {
    rows: set.rules.map((r) => ({
      status: r.status,
      condition: r.above !== undefined ? 'above' : r.below !== undefined ? 'below' : 'equals',
      value: String(r.above ?? r.below ?? r.equals ?? ''),
      for: r.for ?? '',
      description: r.description ?? '',
    })),
    hysteresis: set.hysteresis ? String(set.hysteresis) : '',
    staleAfter: set.stale?.after ?? '',
    staleStatus: set.stale?.status ?? 'WARNING',
    revision,
  };
}

/** The rules of the form's values, for /thresholds/set: rows without a value left out. */
export function rulesInput(
  v: RulesFormValues,
  dataType: DataPointRules['dataType'],
): Record<string, unknown> {
  const rules = v.rows
    .filter((r) => r.value.trim() !== '')
    .map((r) => ({
      status: r.status,
      [r.condition]: valueOf(r.condition, r.value.trim(), dataType),
      ...(r.for.trim() === '' ? {} : { for: r.for.trim() }),
      ...(r.description.trim() === '' ? {} : { description: r.description.trim() }),
    }));
  const h = v.hysteresis.trim();
  return {
    rules,
    hysteresis: h === '' ? 0 : Number.isFinite(Number(h)) ? Number(h) : h,
    stale: v.staleAfter.trim() === '' ? null : { after: v.staleAfter.trim(), status: v.staleStatus },
  };
}

/** A limit as the rule takes it: a number, or for `equals` of a yes/no or text data point, its value. */
function valueOf(
  condition: RuleRow['condition'],
  text: string,
  dataType: DataPointRules['dataType'],
): unknown {
  if (condition === 'equals' && dataType === 'boolean')
    return text === 'true' ? true : text === 'false' ? false : text;
  if (condition === 'equals' && !isNumericDataType(dataType)) return text;
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
}

/** Blank rule rows offered besides the rules there are. */
const BLANK_RULE_ROWS = 2;
const STATUSES = ['INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;

export function rulesFormBody(o: {
  session: ConsoleSession;
  deviceName: string;
  displayName: string;
  point: DataPointRules;
  values: RulesFormValues;
  error?: AppError | undefined;
  conflict?: boolean;
}): Html {
  const { point: p, values: v } = o;
  const rows = [
    ...v.rows,
    ...Array.from({ length: BLANK_RULE_ROWS }, (): RuleRow => ({
      status: 'WARNING',
      condition: 'above',
      value: '',
      for: '',
      description: '',
    })),
  ];
  const options = (values: readonly string[], current: string) =>
    values.map((s) => html`<option value="${s}"${s === current ? html` selected` : ''}>${s}</option>`);
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="${paths.fleet}">Fleet</a> <span aria-hidden="true">/</span> <a href="${paths.device(o.deviceName)}">${o.displayName}</a> <span aria-hidden="true">/</span> <span>Rules of ${p.displayName}</span></nav>
<div class="page-head"><div><h1>Rules of ${p.displayName}</h1><p class="sub"><span class="mono">${o.deviceName}</span> · <span class="mono">${p.sensorName}</span> (${p.dataType})</p></div></div>
${o.error ? refusalNotice(o.error) : ''}
${
  o.conflict
    ? html`<div class="notice notice-note" role="status">Someone changed this override while you edited it: the form now shows the rules as they are (revision ${v.revision}). Your change was not saved; make it again on these.</div>`
    : ''
}
<section class="card"><h2>The definition’s rules</h2>${rulesList(p.definition)}<p class="small muted">${p.override ? 'The device overrides them with the rules below.' : 'They apply to this device until it overrides them.'}</p></section>
<form class="card stack-form manage-form" method="post" action="${paths.deviceRules(o.deviceName, p.sensorName)}">
<h2>${p.override ? 'The device’s override' : 'Override for this device'}</h2>
<p class="small">The override replaces the definition’s rules, hysteresis and stale rule for this device only. A row without a value is left out.</p>
${csrfField(o.session)}
${hidden('revision', v.revision)}
<div class="table-wrap"><table class="table compact rule-rows">
<thead><tr><th scope="col">Status</th><th scope="col">When the value is</th><th scope="col">Value</th><th scope="col">For</th><th scope="col">Description</th></tr></thead>
<tbody>${rows.map(
    (r, i) => html`<tr>
<td data-label="Status"><label class="visually-hidden" for="rule-status-${i}">Status of rule ${i + 1}</label><select id="rule-status-${i}" name="ruleStatus">${options(STATUSES, r.status)}</select></td>
<td data-label="When"><label class="visually-hidden" for="rule-cond-${i}">Condition of rule ${i + 1}</label><select id="rule-cond-${i}" name="ruleCondition">${options(['above', 'below', 'equals'], r.condition)}</select></td>
<td data-label="Value"><label class="visually-hidden" for="rule-value-${i}">Value of rule ${i + 1}</label><input id="rule-value-${i}" name="ruleValue" value="${r.value}" autocomplete="off" class="short"></td>
<td data-label="For"><label class="visually-hidden" for="rule-for-${i}">How long rule ${i + 1} must hold</label><input id="rule-for-${i}" name="ruleFor" value="${r.for}" placeholder="10m" autocomplete="off" class="short"></td>
<td data-label="Description"><label class="visually-hidden" for="rule-desc-${i}">Description of rule ${i + 1}</label><input id="rule-desc-${i}" name="ruleDescription" value="${r.description}" autocomplete="off"></td>
</tr>`,
  )}</tbody>
</table></div>
<div class="form-grid">
<div class="field"><label for="rule-hysteresis">Hysteresis</label><input id="rule-hysteresis" name="hysteresis" value="${v.hysteresis}" inputmode="decimal" autocomplete="off"><p class="hint">How far back the value must come before the status returns; empty: 0.</p></div>
<div class="field"><label for="rule-stale">No value for</label><input id="rule-stale" name="staleAfter" value="${v.staleAfter}" placeholder="30m" autocomplete="off"><p class="hint">Then the stale status; empty: never stale.</p></div>
<div class="field"><label for="rule-stale-status">Stale status</label><select id="rule-stale-status" name="staleStatus">${options(STATUSES, v.staleStatus)}</select></div>
</div>
<div class="actions"><button type="submit" class="btn btn-primary">Save override</button><a class="btn btn-ghost" href="${paths.device(o.deviceName)}">Cancel</a></div>
</form>`;
}
