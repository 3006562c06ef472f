import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipHtml } from '../../../src/console/gzip-html.ts';
import { html, raw } from '../../../src/console/html.ts';

describe('gzipHtml', () => {
  it('is the page, whole, with shared parts anywhere in it (gunzip checks the CRC and the length)', () => {
    const rows = raw('<tr><td>Küche ✓ &amp; 💡</td></tr>'.repeat(2000));
    rows.encoded();
    const pages = [
      html`<h1>${'Fleet <x>'}</h1><table>${rows}</table><p>${'after'}</p>${rows}`,
      html`${rows}`,
      html`${rows}<p>tail</p>`,
      html`<p>no shared part</p>`,
      raw(''),
    ];
    for (const page of pages) expect(gunzipSync(gzipHtml(page)).equals(page.toBuffer())).toBe(true);
  });

  it('compresses a shared part once and keeps the pages it is in small', () => {
    const rows = raw('<tr><td>device</td><td>SUCCESS</td></tr>'.repeat(5000));
    rows.encoded();
    const a = gzipHtml(html`<p>${'one'}</p>${rows}`);
    const b = gzipHtml(html`<p>${'two'}</p>${rows}`);
    expect(a.length).toBeLessThan(rows.encoded().length / 20);
    // The shared part's compressed bytes are the same in both: only the text around it differs.
    expect(Math.abs(a.length - b.length)).toBeLessThan(8);
    expect(gunzipSync(b).toString()).toBe(`<p>two</p>${rows.text}`);
  });
});
