/**
 * Small pieces every console page uses: status pills (colour and text), times (relative, with the
 * exact time on hover), the navigation's paths. Pure; the clock is passed in.
 */
import type { Status } from '../../domain/types.ts';
import { html, type Html } from '../html.ts';

export const STATUS_LABEL: Record<Status, string> = {
  SUCCESS: 'OK',
  INFO: 'Info',
  WARNING: 'Warning',
  ERROR: 'Error',
  CRITICAL: 'Critical',
};

/** The class of a status colour: `st-ok`, `st-warning`, … */
export const statusClass = (status: Status | null): string =>
  status === null ? 'st-none' : status === 'SUCCESS' ? 'st-ok' : `st-${status.toLowerCase()}`;

/** A status as a pill: its colour and its name, so that it reads without colour too. */
export function statusPill(status: Status | null, label?: string): Html {
  return html`<span class="pill ${statusClass(status)}">${label ?? (status === null ? 'No data' : STATUS_LABEL[status])}</span>`;
}

export const silentPill = (): Html => html`<span class="pill st-silent" title="No contact within its timeout">Silent</span>`;

/** "4 min ago" of `ms` at `nowMs`. */
export function relativeTime(ms: number, nowMs: number): string {
  const s = Math.round((nowMs - ms) / 1000);
  if (s < 0) return 'in the future';
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} days ago`;
}

/** Exact UTC time, as shown on hover: `2026-11-22 14:03:12 UTC`. */
export const exactTime = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/**
 * A time, shown relatively ("4 min ago") with the exact time on hover. The markup holds the exact
 * time only, so that it changes with the data and not with the clock (live updates send what
 * changed); the page's script writes the relative text and keeps it current. `_nowMs` is the
 * render's clock, for callers that show it otherwise.
 */
export function timeAgo(ms: number | null, _nowMs: number, never = 'Never'): Html {
  if (ms === null) return html`<span class="muted">${never}</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}" title="${exactTime(ms)}" data-rel>${exactTime(ms).slice(0, 16)} UTC</time>`;
}

/** Console paths. Names are percent-encoded: a device name may hold spaces and colons. */
export const paths = {
  root: '/console/',
  signIn: '/console/sign-in',
  signOut: '/console/sign-out',
  fleet: '/console/fleet',
  device: (name: string) => `/console/devices/${encodeURIComponent(name)}`,
  events: '/console/events',
  alarms: '/console/alarms',
  acknowledge: '/console/alarms/acknowledge',
  ingestion: '/console/ingestion',
  definitions: '/console/definitions',
  definition: (isPublic: boolean, name: string) =>
    `/console/definitions/${isPublic ? 'public' : 'private'}/${encodeURIComponent(name)}`,
  live: '/console/live',
  /** A device's rules of one data point: its threshold override (admins edit it there). */
  deviceRules: (device: string, sensor: string) =>
    `/console/devices/${encodeURIComponent(device)}/rules/${encodeURIComponent(sensor)}`,
  deviceRulesClear: (device: string, sensor: string) =>
    `/console/devices/${encodeURIComponent(device)}/rules/${encodeURIComponent(sensor)}/clear`,
  // Management (admins only).
  manage: '/console/manage',
  manageDevices: '/console/manage/devices',
  newDevice: '/console/manage/devices/new',
  editDevice: (name: string) => `/console/manage/devices/${encodeURIComponent(name)}/edit`,
  deleteDevice: (name: string) => `/console/manage/devices/${encodeURIComponent(name)}/delete`,
  importDevices: '/console/manage/devices/import',
  exportDevices: '/console/manage/devices/export.csv',
  apiKeys: '/console/manage/api-keys',
  tokens: '/console/manage/tokens',
  users: '/console/manage/users',
  alerting: '/console/manage/alerting',
  audit: '/console/manage/audit',
};

/** A query string of the given parameters, those without a value left out. */
export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}
