/**
 * Pieces of the console's management pages that need no server: the audit log's pager (its cursor
 * and the filters kept) and its changes field by field, a rule form's values as /thresholds/set
 * takes them, a form's label rows, and the label filter's text.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/app-error.ts';
import { labelRowsOf, labelsOf } from '../../../src/console/manage-forms.ts';
import { auditBody, changeList } from '../../../src/console/views/audit-view.ts';
import { labelFilterOf, parseLabelFilter } from '../../../src/console/views/label-filter.ts';
import { rulesFormValues, rulesInput } from '../../../src/console/views/rules-view.ts';

const filter = { actor: 'ada', action: 'device', target: '', from: '2026-12-01T00:00', to: '' };
const entry = (id: string) => ({
  id,
  atUTC: '2026-12-01T10:00:00.000Z',
  actor: 'ada',
  action: 'device.update' as const,
  target: 'freezer-7',
  before: { displayName: 'Freezer', labels: { site: 'amsterdam' }, revision: 1 },
  after: { displayName: 'Freezer 7', labels: { site: 'amsterdam', floor: '2' }, revision: 2 },
  details: {},
});

describe('the audit page', () => {
  it('pages by the log’s cursor, keeping the filters', () => {
    const page = auditBody({ entries: [entry('e2'), entry('e1')], next: 'e1', filter, paged: false }).text;
    expect(page).toContain(
      'href="/console/manage/audit?actor=ada&amp;action=device&amp;from=2026-12-01T00%3A00&amp;before=e1">Older</a>',
    );
    expect(page).not.toContain('>Newest</a>');
    const last = auditBody({ entries: [entry('e0')], next: null, filter, paged: true }).text;
    expect(last).toContain(
      'href="/console/manage/audit?actor=ada&amp;action=device&amp;from=2026-12-01T00%3A00">Newest</a>',
    );
    expect(last).not.toContain('>Older</a>');
  });

  it('shows an update’s fields that differ, a creation’s and a deletion’s fields, and the details', () => {
    const update = changeList(entry('e1')).text;
    expect(update.match(/<li class="changed">/g)).toHaveLength(3);
    expect(update).toContain(
      '<span class="chg-field">displayName</span> <span class="before">Freezer</span>',
    );
    expect(update).toContain('<span class="chg-field">labels.floor</span> <span class="before">—</span>');
    expect(update).not.toContain('labels.site');
    const created = changeList({ after: { rules: [{ status: 'WARNING', above: 890 }] }, details: {} }).text;
    expect(created).toContain(
      '<li class="added"><span class="chg-field">rules[0].above</span> <span class="after">890</span></li>',
    );
    const deleted = changeList({ before: { name: 'hook' }, details: { ok: true } }).text;
    expect(deleted).toContain('<li class="removed"><span class="chg-field">name</span>');
    expect(deleted).toContain('<li class="detail"><span class="chg-field">ok</span> <span>true</span></li>');
  });
});

describe('a rule form', () => {
  it('gives /thresholds/set the rules typed, rows without a value left out', () => {
    const values = rulesFormValues(
      {
        rules: [{ status: 'WARNING', above: 1000, for: '10m', description: 'Stuffy' }],
        hysteresis: 5,
        stale: null,
      },
      0,
    );
    values.rows.push({ status: 'CRITICAL', condition: 'above', value: '', for: '', description: '' });
    values.staleAfter = '30m';
    expect(rulesInput(values, 'co2')).toEqual({
      rules: [{ status: 'WARNING', above: 1000, for: '10m', description: 'Stuffy' }],
      hysteresis: 5,
      stale: { after: '30m', status: 'WARNING' },
    });
    const door = rulesFormValues({ rules: [], hysteresis: 0, stale: null }, 3);
    door.rows.push({ status: 'WARNING', condition: 'equals', value: 'true', for: '', description: '' });
    expect(rulesInput(door, 'boolean')).toEqual({
      rules: [{ status: 'WARNING', equals: true }],
      hysteresis: 0,
      stale: null,
    });
    // What is not a number goes as typed, for the domain to refuse with its message.
    door.rows[0] = { status: 'WARNING', condition: 'above', value: 'lots', for: '', description: '' };
    expect(rulesInput(door, 'temperature').rules).toEqual([{ status: 'WARNING', above: 'lots' }]);
  });
});

describe('labels in forms and filters', () => {
  it('reads label rows, leaving blank ones out, and refuses a key given twice', () => {
    const form = (pairs: [string, string][]) => ({
      all: (name: string) => pairs.map(([k, v]) => (name === 'labelKey' ? k : v)),
    });
    const rows = labelRowsOf(
      form([
        [' site ', 'amsterdam'],
        ['', ''],
        ['floor', '2'],
      ]),
    );
    expect(labelsOf(rows)).toEqual({ site: 'amsterdam', floor: '2' });
    expect(() =>
      labelsOf(
        labelRowsOf(
          form([
            ['site', 'a'],
            ['site', 'b'],
          ]),
        ),
      ),
    ).toThrow(AppError);
  });

  it('reads a filter as key=value;key=value, and nothing from one that is not', () => {
    expect(parseLabelFilter('site=amsterdam; floor=2')).toEqual({ site: 'amsterdam', floor: '2' });
    expect(parseLabelFilter('amsterdam')).toBe('"amsterdam" is not key=value');
    expect(labelFilterOf(new URLSearchParams('labels=amsterdam'))).toBeUndefined();
    expect(labelFilterOf(new URLSearchParams('labels=site%3Damsterdam'))).toEqual({ site: 'amsterdam' });
  });
});
