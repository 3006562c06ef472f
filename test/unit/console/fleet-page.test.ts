/**
 * The fleet page of a large fleet: the most severe devices listed (search and status filters cover
 * all of them), a way to list all, and rows rendered once per snapshot whoever asks.
 */
import { describe, expect, it } from 'vitest';
import type { FleetDevice, FleetSnapshot } from '../../../src/console/fleet-data.ts';
import {
  FLEET_ROWS,
  fleetBody,
  fleetRegions,
  parseFleetFilter,
} from '../../../src/console/views/fleet-view.ts';

/** Even devices are in amsterdam; odd ones in utrecht, on floor i % 5. */
const labelsOf = (i: number): Record<string, string> =>
  i % 2 === 0 ? { site: 'amsterdam' } : { site: 'utrecht', floor: String(i % 5) };

function snapshot(n: number): FleetSnapshot {
  const devices: FleetDevice[] = Array.from({ length: n }, (_, i) => ({
    deviceName: `dev-${String(i).padStart(4, '0')}`,
    displayName: i === n - 1 ? 'Boiler room' : `Device ${i}`,
    definitionName: 'Sensors',
    definitionIsPublic: false,
    labels: labelsOf(i),
    status: i < 3 ? 'CRITICAL' : 'SUCCESS',
    lastContactMs: 1_800_000_000_000,
    silent: false,
    silentStatus: 'ERROR',
    problems: [],
  }));
  const counts = { SUCCESS: n - 3, INFO: 0, WARNING: 0, ERROR: 0, CRITICAL: 3, SILENT: 0, NO_DATA: 0 };
  return { env: 'acme', locale: 'en', devices, counts, readMs: 0 };
}

const rowCount = (markup: string) => markup.match(/<tr data-key=/g)?.length ?? 0;

describe('the fleet page of a large fleet', () => {
  it('lists the most severe devices and says how to reach the others', () => {
    const fleet = snapshot(1008);
    const page = fleetBody(fleet, {}, 0).text;
    expect(rowCount(page)).toBe(FLEET_ROWS);
    expect(page).toContain('Showing the 200 most severe of 1008 devices');
    expect(page).toContain('href="/console/fleet?all=1">show all 1008</a>');
    expect(page).toContain('<span class="count-n">3</span><span class="count-label">Critical</span>');
    expect(rowCount(fleetBody(fleet, parseFleetFilter(new URLSearchParams('all=1')), 0).text)).toBe(1008);
  });

  it('searches every device, not only those listed', () => {
    const page = fleetBody(snapshot(1008), parseFleetFilter(new URLSearchParams('q=boiler')), 0).text;
    expect(rowCount(page)).toBe(1);
    expect(page).toContain('Boiler room');
    expect(page).not.toContain('id="fleet-more"');
  });

  it('filters by labels, every one of them, and shows each device’s labels', () => {
    const fleet = snapshot(20);
    const page = fleetBody(fleet, parseFleetFilter(new URLSearchParams('labels=site=utrecht;floor=1')), 0).text;
    // Odd devices are in utrecht; of those, 1 and 11 are on floor 1.
    expect(page.match(/<tr data-key="[^"]+"/g)).toEqual(['<tr data-key="dev-0001"', '<tr data-key="dev-0011"']);
    expect(page).toContain('<span class="label-k">floor</span>=<span class="label-v">1</span>');
    expect(page).toContain('value="site=utrecht;floor=1"');
    // The status filters keep the labels.
    expect(page).toContain('href="/console/fleet?status=CRITICAL&amp;labels=site%3Dutrecht%3Bfloor%3D1"');
    expect(rowCount(fleetBody(fleet, parseFleetFilter(new URLSearchParams('labels=site=rotterdam')), 0).text)).toBe(0);
  });

  it('renders the rows of a snapshot once for every page and live stream that shows them', () => {
    const fleet = snapshot(300);
    const first = fleetRegions(fleet, {}, 0);
    expect(fleetRegions(fleet, {}, 5000)).toBe(first);
    expect(fleetRegions(snapshot(300), {}, 0)).not.toBe(first);
  });
});
