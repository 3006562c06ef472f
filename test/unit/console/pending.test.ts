/**
 * A rule that waits, as the device page shows it: pending (with when it is due) while its condition
 * holds and its duration is not met, nothing once met, and nothing when the rules changed since.
 */
import { describe, expect, it } from 'vitest';
import { pendingOf } from '../../../src/console/device-data.ts';
import { parseThresholdSet, thresholdFingerprint } from '../../../src/domain/thresholds.ts';
import type { PointRecord } from '../../../src/state/point-record.ts';

const MIN = 60_000;
const set = parseThresholdSet(
  {
    rules: [
      { status: 'WARNING', above: 25 },
      { status: 'CRITICAL', above: 30, for: '10m', description: 'Overheating' },
    ],
  },
  'temperature',
);

const point = (over: Partial<PointRecord>): PointRecord => ({
  updatedMs: 3 * MIN,
  offsetNs: 0,
  rule: 0,
  rulesId: thresholdFingerprint(set),
  status: 'WARNING',
  lastSuccessMs: null,
  statusSinceMs: 0,
  hour: null,
  receivedMs: 3 * MIN,
  held: [
    { rule: 1, sinceMs: 0 },
    { rule: 0, sinceMs: null },
  ],
  shownValue: '31.0 °C',
  ...over,
});

describe('a pending condition on the device page', () => {
  it('shows the waiting rule that is not met yet, with its text and when it began', () => {
    expect(pendingOf(point({}), set, 'temperature', 'en')).toEqual({
      status: 'CRITICAL',
      text: 'Overheating for 10 min',
      sinceMs: 0,
      forMs: 10 * MIN,
    });
  });

  it('shows nothing once the rule is met, when nothing waits, or when the rules changed', () => {
    expect(
      pendingOf(point({ updatedMs: 10 * MIN, rule: 1, status: 'CRITICAL' }), set, 'temperature', 'en'),
    ).toBeNull();
    expect(pendingOf(point({ held: [] }), set, 'temperature', 'en')).toBeNull();
    expect(pendingOf(point({ rulesId: 'other' }), set, 'temperature', 'en')).toBeNull();
  });
});

describe('the device page row of a data point', () => {
  it('shows a pending status with when it is due, and marks a stale data point', async () => {
    const { deviceRegions } = await import('../../../src/console/views/device-view.ts');
    const pointOf = (over: Record<string, unknown>) => ({
      sensorName: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature' as const,
      value: '31.0 °C',
      status: 'WARNING' as const,
      sinceMs: 0,
      updatedMs: 3 * MIN,
      suppressed: false,
      pending: null,
      stale: false,
      chart: 'band' as const,
      ...over,
    });
    const rows = (points: ReturnType<typeof pointOf>[]) => {
      const regions = deviceRegions({
        view: {
          device: {
            env: 'acme',
            deviceName: 'd1',
            displayName: 'D1',
            definitionName: 'Freezer',
            definitionIsPublic: false,
            labels: {},
            revision: 1,
            createdUTC: '',
          },
          spec: null,
          locale: 'en',
          lastContactMs: 3 * MIN,
          silent: false,
          silentStatus: 'ERROR',
          status: 'WARNING',
          points,
          alarms: [],
          events: [],
          payloads: [],
        },
        charts: [],
        session: {
          env: 'acme',
          username: 'u',
          role: 'operator',
          csrf: 't',
          createdMs: 0,
          endMs: 1,
          secretHash: 'h',
        },
        nowMs: 4 * MIN,
      });
      const region = regions.find((r) => r.id === 'device-points');
      return region && 'rows' in region ? region.rows.map((r) => r.html.text).join('') : '';
    };
    const pending = {
      status: 'CRITICAL' as const,
      text: 'Overheating for 10 min',
      sinceMs: 0,
      forMs: 10 * MIN,
    };
    const shown = rows([pointOf({ pending })]);
    expect(shown).toContain('class="small pending" title="Overheating for 10 min">Critical pending since');
    expect(shown).toContain(`due <time datetime="${new Date(10 * MIN).toISOString()}"`);
    expect(rows([pointOf({ stale: true })])).toContain('>no value</span>');
    expect(rows([pointOf({})])).not.toMatch(/pending|no value/);
  });
});
