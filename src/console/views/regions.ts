/**
 * The parts of a page that update while it is open. A page renders its regions inline; its live
 * stream (live.ts) renders them again when the environment changes and sends what differs: a block
 * region whole, a row region by its rows (keyed), so a fleet of 1,000 devices sends the rows that
 * changed, not the table.
 */
import { html, type Html } from '../html.ts';

export interface Row {
  /** Unique within its region: the row's `data-key`. */
  key: string;
  html: Html;
}

export type Region =
  | { id: string; html: Html }
  | { id: string; rows: Row[] }
  /** Data for a page's script (the device charts), sent as JSON. */
  | { id: string; data: unknown };

/**
 * A row whose markup carries its key: `render` puts the `data-key` attribute it is given on the row's
 * element, by which the page's script finds the row to replace when it changes. A row without it
 * could not be found: its new version would be added beside the old one.
 */
export function keyedRow(key: string, render: (keyAttribute: Html) => Html): Row {
  return { key, html: render(html` data-key="${key}"`) };
}

/**
 * Unique keys of rows that have no identity of their own (events): each row's `identity`, the second
 * and later rows of the same identity with their count appended.
 */
export function uniqueKeys<T>(items: readonly T[], identity: (item: T) => string): string[] {
  const seen = new Map<string, number>();
  return items.map((item) => {
    const id = identity(item);
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    return n === 0 ? id : `${id}\n${n}`;
  });
}

/** Renders the rows of a row region as the page holds them. */
export const rowsHtml = (rows: readonly Row[]): Html[] => rows.map((r) => r.html);
