/**
 * Labels as the console's pages show them (tags `key=value`) and filter by them (the fleet, the
 * events, the device list): text `key=value;key=value`, the read API's form; a device matches when
 * it has every one.
 */
import { html, type Html } from '../html.ts';

/** The labels of a filter's text, or what is wrong with it. */
export function parseLabelFilter(text: string): Record<string, string> | string {
  const out = new Map<string, string>();
  for (const pair of text.split(';')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 1) return `${JSON.stringify(pair.trim())} is not key=value`;
    out.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  return Object.fromEntries(out);
}

/** The labels of a page's `labels` parameter; undefined when it has none, or none that reads. */
export function labelFilterOf(params: URLSearchParams): Record<string, string> | undefined {
  const parsed = parseLabelFilter((params.get('labels') ?? '').slice(0, 2000));
  return typeof parsed === 'string' || Object.keys(parsed).length === 0 ? undefined : parsed;
}

/** Labels as the filter's text. */
export const labelFilterText = (labels: Readonly<Record<string, string>> | undefined): string | undefined =>
  labels === undefined
    ? undefined
    : Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(';');

/** Whether `labels` has every one of `wanted`. */
export function hasLabels(
  labels: Readonly<Record<string, string>>,
  wanted: Readonly<Record<string, string>> | undefined,
): boolean {
  if (wanted === undefined) return true;
  for (const [k, v] of Object.entries(wanted)) if (!Object.hasOwn(labels, k) || labels[k] !== v) return false;
  return true;
}

/** Labels as tags `key=value`. */
export function labelTags(labels: Readonly<Record<string, string>>): Html {
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return html`<span class="muted">—</span>`;
  return html`<ul class="labels">${entries.map(
    ([k, v]) =>
      html`<li class="label-tag"><span class="label-k">${k}</span>=<span class="label-v">${v}</span></li>`,
  )}</ul>`;
}
