/**
 * The console's pages as markup: values escaped by construction, a parser error's line found, and
 * the assets of a page within their budget (300 KB compressed, all of them together).
 */
import { describe, expect, it } from 'vitest';
import { loadAssets } from '../../../src/console/assets.ts';
import { html, jsonInHtml, raw } from '../../../src/console/html.ts';
import { errorLocation } from '../../../src/management/definition-trials.ts';
import { messageWithLocation } from '../../../src/console/views/ingestion-view.ts';

const HOSTILE = '<img src=x onerror=alert(1)>';

describe('console markup', () => {
  it('escapes every interpolated value, in text and in attributes, unless it is markup already', () => {
    const name = `${HOSTILE}"'&`;
    expect(html`<a title="${name}">${name}</a>`.text).toBe(
      '<a title="&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;">&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;</a>',
    );
    expect(html`<p>${[html`<b>${HOSTILE}</b>`, raw('<i>ok</i>')]}</p>`.text).toBe(
      '<p><b>&lt;img src=x onerror=alert(1)&gt;</b><i>ok</i></p>',
    );
    expect(jsonInHtml({ v: '</script><script>alert(1)</script>' }).text).not.toContain('</script>');
  });

  it('finds the line and column of a parser error and sets the location apart, escaped', () => {
    const message = `Error: cannot read ${HOSTILE} (at Probe.js:3:19)`;
    expect(errorLocation(message, 'Probe.js')).toEqual({ line: 3, column: 19 });
    expect(errorLocation('SyntaxError: Unexpected token', 'Probe.js')).toBeUndefined();
    expect(messageWithLocation(message).text).toBe(
      'Error: cannot read &lt;img src=x onerror=alert(1)&gt; <span class="loc">at <code>Probe.js:3:19</code></span>',
    );
  });

  it('keeps the assets of a page under 300 KB compressed', () => {
    const sizes = loadAssets().sizes();
    expect(Object.keys(sizes).sort()).toEqual([
      'charts.js',
      'console.css',
      'console.js',
      'editor.css',
      'editor.js',
      'favicon.svg',
      'uPlot.esm.js',
      'uPlot.min.css',
    ]);
    const total = Object.values(sizes).reduce((sum, s) => sum + s.gzipBytes, 0);
    expect(total).toBeLessThan(300 * 1024);
  });
});
