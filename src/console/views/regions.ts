/**
 * The parts of a page that update while it is open. A page renders its regions inline; its live
 * stream (live.ts) renders them again when the environment changes and sends what differs: a block
 * region whole, a row region by its rows (keyed), so a fleet of 1,000 devices sends the rows that
 * changed, not the table.
 */
import type { Html } from '../html.ts';

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

/** Renders the rows of a row region as the page holds them. */
export const rowsHtml = (rows: readonly Row[]): Html[] => rows.map((r) => r.html);
