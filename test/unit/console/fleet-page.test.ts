/**
 * The fleet page rendered from a page of the fleet: the counts of the whole environment, the page's
 * rows, links to the next and previous pages that keep the filter, a search stopped at its limit
 * said so, and rows rendered once per page read whoever asks.
 */
import { describe, expect, it } from 'vitest';
import type { FleetDevice, FleetPage, FleetSummary } from '../../../src/console/fleet-data.ts';
import {
  FLEET_ROWS,
  fleetBody,
  fleetParams,
  fleetRegions,
  parseFleetFilter,
  parseFleetPosition,
} from '../../../src/console/views/fleet-view.ts';

/** Even devices are in amsterdam; odd ones in utrecht, on floor i % 5. */
const labelsOf = (i: number): Record<string, string> =>
  i % 2 === 0 ? { site: 'amsterdam' } : { site: 'utrecht', floor: String(i % 5) };

const device = (i: number): FleetDevice => ({
  deviceName: `dev-${String(i).padStart(4, '0')}`,
  displayName: `Device ${i}`,
  definitionName: 'Sensors',
  definitionIsPublic: false,
  labels: labelsOf(i),
  status: i < 3 ? 'CRITICAL' : 'SUCCESS',
  lastContactMs: 1_800_000_000_000,
  silent: false,
  silentStatus: 'ERROR',
  problems: [],
});

const summary = (total: number): FleetSummary => ({
  env: 'acme',
  locale: 'en',
  total,
  counts: { SUCCESS: total - 5, INFO: 0, WARNING: 0, ERROR: 0, CRITICAL: 3, SILENT: 0, NO_DATA: 2 },
  attention: [],
  attentionOf: new Map(),
  readMs: 0,
});

function page(from: number, n: number, o: Partial<FleetPage> = {}): FleetPage {
  return {
    summary: summary(1008),
    devices: Array.from({ length: n }, (_, i) => device(from + i)),
    first: from === 0,
    ...o,
  };
}

const rowKeys = (markup: string) => [...markup.matchAll(/<tr data-key="([^"]+)"/g)].map((m) => m[1]);

describe('the fleet page', () => {
  it('shows the environment’s counts, the page’s rows and a link to the next page', () => {
    const markup = fleetBody(page(0, FLEET_ROWS, { next: { name: 'dev-0099' } }), {}, 0).text;
    expect(rowKeys(markup)).toHaveLength(FLEET_ROWS);
    expect(markup).toContain('<span id="fleet-total">1008 devices</span>');
    expect(markup).toContain('<span class="count-n">3</span><span class="count-label">Critical</span>');
    expect(markup).toContain('<span class="count-n">2</span><span class="count-label">No data</span>');
    expect(markup).toContain('Showing the first 100 of 1008 devices, most severe first');
    expect(markup).toContain('<a class="btn" rel="next" href="/console/fleet?after=dev-0099">Next</a>');
    expect(markup).not.toContain('rel="prev"');
    expect(markup).not.toContain('First page');
  });

  it('links a later page to the first, the previous and the next, keeping the filter', () => {
    const filter = parseFleetFilter(new URLSearchParams('labels=site=utrecht&status=CRITICAL'));
    const markup = fleetBody(
      page(100, FLEET_ROWS, { previous: { name: 'dev-0001', at: 'CRITICAL' }, next: { name: 'dev-0199' } }),
      filter,
      0,
    ).text;
    expect(markup).toContain(
      'href="/console/fleet?status=CRITICAL&amp;labels=site%3Dutrecht">First page</a>',
    );
    expect(markup).toContain(
      'rel="prev" href="/console/fleet?status=CRITICAL&amp;labels=site%3Dutrecht&amp;before=dev-0001&amp;at=CRITICAL"',
    );
    expect(markup).toContain(
      'rel="next" href="/console/fleet?status=CRITICAL&amp;labels=site%3Dutrecht&amp;after=dev-0199"',
    );
    // The status filters keep the labels and start at the first page.
    expect(markup).toContain('href="/console/fleet?status=WARNING&amp;labels=site%3Dutrecht"');
    expect(markup).toContain('Showing 100 devices that match on this page');
  });

  it('says where a search stopped when it looked at its most devices', () => {
    const filter = parseFleetFilter(new URLSearchParams('q=boiler'));
    const markup = fleetBody(
      page(0, 1, { next: { name: 'dev-1999' }, searchedTo: 'dev-1999' }),
      filter,
      0,
    ).text;
    expect(markup).toContain('searched as far as <span class="mono">dev-1999</span>, Next searches on');
    expect(markup).toContain('rel="next" href="/console/fleet?q=boiler&amp;after=dev-1999"');
  });

  it('shows each device’s labels and no pager when one page holds them all', () => {
    const markup = fleetBody(
      page(0, 3),
      parseFleetFilter(new URLSearchParams('labels=site=utrecht;floor=1')),
      0,
    ).text;
    expect(markup).toContain('<span class="label-k">floor</span>=<span class="label-v">1</span>');
    expect(markup).toContain('value="site=utrecht;floor=1"');
    expect(markup).not.toContain('class="pager"');
    expect(fleetBody(page(0, 0), {}, 0).text).toContain('No device matches.');
  });

  it('reads a position back from the parameters its links carry', () => {
    for (const position of [
      { after: { name: 'a b:c', at: 'ERROR' as const } },
      { before: { name: 'x' } },
      {},
    ]) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(fleetParams({}, position))) if (v !== undefined) params.set(k, v);
      const read = parseFleetPosition(params);
      expect(read.before ?? read.after).toEqual(
        'before' in position
          ? { ...position.before, at: undefined }
          : 'after' in position
            ? position.after
            : undefined,
      );
    }
  });

  it('renders the rows of a page once for every client and live stream that shows it', () => {
    const shown = page(0, 50);
    const first = fleetRegions(shown, {}, 0);
    expect(fleetRegions(shown, {}, 5000)).toBe(first);
    expect(fleetRegions(page(0, 50), {}, 0)).not.toBe(first);
  });
});
