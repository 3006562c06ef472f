import { describe, expect, it } from 'vitest';
import { cursorOf, pageAfter, type IngestLogEntry } from '../../../src/ingest/ingest-log.ts';

/** Entries newest first, as the log lists them: n, n-1, …, 1. */
const log = (n: number, device = 'd'): IngestLogEntry[] =>
  Array.from({ length: n }, (_, i) => ({
    receivedUTC: '2026-01-01T00:00:00.000Z',
    ingestId: `id${n - i}`,
    gateway: 'submit',
    deviceName: device,
    outcome: 'accepted',
    code: null,
    message: null,
    definitionVersion: null,
  }));
const ids = (entries: IngestLogEntry[]) => entries.map((e) => e.ingestId);

describe('pageAfter', () => {
  it('pages from the newest, each page after the entry its cursor names, the last without one', () => {
    const entries = log(5);
    const first = pageAfter(entries, undefined, 2);
    expect(first).toMatchObject({ offset: 0, older: 'id4/d', gone: false });
    expect(ids(first.entries)).toEqual(['id5', 'id4']);
    const second = pageAfter(entries, first.older, 2);
    expect(ids(second.entries)).toEqual(['id3', 'id2']);
    const last = pageAfter(entries, second.older, 2);
    expect(last).toMatchObject({ offset: 4, older: undefined, gone: false });
    expect(ids(last.entries)).toEqual(['id1']);
  });

  it('is not shifted by entries that arrived since the page before', () => {
    const first = pageAfter(log(4), undefined, 2);
    const grown = [...log(2, 'new').map((e) => ({ ...e, ingestId: `new${e.ingestId}` })), ...log(4)];
    expect(ids(pageAfter(grown, first.older, 2).entries)).toEqual(['id2', 'id1']);
  });

  it('tells a cursor whose entry is not in the list, and shows nothing after it', () => {
    const page = pageAfter(log(3), cursorOf({ ...log(1)[0]!, ingestId: 'gone' }), 2);
    expect(page).toMatchObject({ entries: [], offset: 3, older: undefined, gone: true });
  });
});
