/**
 * The console's static files, served by Vigil itself (operators' networks are often closed: no CDN):
 * its own stylesheet, ES modules and icon from src/console/assets, uPlot from node_modules, and the
 * definition editor's module, CodeMirror bundled by esbuild (editor-bundle.ts). Read
 * once at start, compressed once, and served under URLs that carry their content's hash, so browsers
 * keep them for good and fetch them again only when they change. The icon is also served at
 * /favicon.ico, where browsers look for one unasked.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import type { Request, Response } from 'express';
import { editorBundle } from './editor-bundle.ts';
import type { AssetUrls } from './views/layout.ts';

interface Asset {
  body: Buffer;
  gzip: Buffer;
  type: string;
  version: string;
}

/** The definition editor's module and stylesheet, which only the definition page links. */
export interface EditorAssetUrls {
  js: string;
  css: string;
}

export interface Assets {
  urls: AssetUrls;
  editor: EditorAssetUrls;
  /** Serves `/console/assets/:name`; false when there is no such asset. */
  serve(req: Request, res: Response, name: string): boolean;
  /** Serves `/favicon.ico`: the icon as an ICO file (a 32 px PNG in it). */
  serveIco(res: Response): void;
  /** Compressed bytes of each asset (the budget of a page). */
  sizes(): Record<string, { bytes: number; gzipBytes: number }>;
}

const BASE = '/console/assets/';

export function loadAssets(): Assets {
  const own = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url));
  const require = createRequire(import.meta.url);
  const uplotJs = readFileSync(require.resolve('uplot/dist/uPlot.esm.js'));
  const uplotCss = readFileSync(require.resolve('uplot/dist/uPlot.min.css'));
  const assets = new Map<string, Asset>();
  const ico = own('favicon.ico');
  const add = (name: string, body: Buffer) => {
    const type = name.endsWith('.css')
      ? 'text/css; charset=utf-8'
      : name.endsWith('.svg')
        ? 'image/svg+xml'
        : 'text/javascript; charset=utf-8';
    const version = createHash('sha256').update(body).digest('base64url').slice(0, 12);
    assets.set(name, { body, gzip: gzipSync(body, { level: 9 }), type, version });
    return `${BASE}${name}?v=${version}`;
  };
  const uplotUrl = add('uPlot.esm.js', uplotJs);
  // The charts module imports uPlot by its versioned URL, so a new uPlot is fetched anew.
  const charts = own('charts.js').toString('utf8').replace("'./uPlot.esm.js'", `'${uplotUrl}'`);
  const urls: AssetUrls = {
    css: add('console.css', own('console.css')),
    consoleJs: add('console.js', own('console.js')),
    chartsJs: add('charts.js', Buffer.from(charts)),
    uplotCss: add('uPlot.min.css', uplotCss),
    icon: add('favicon.svg', own('favicon.svg')),
  };
  const editor: EditorAssetUrls = {
    js: add('editor.js', editorBundle().body),
    css: add('editor.css', own('editor.css')),
  };
  return {
    urls,
    editor,
    serve(req, res, name) {
      const asset = assets.get(name);
      if (!asset) return false;
      const versioned = new URL(req.originalUrl, 'http://console').searchParams.get('v') === asset.version;
      res.setHeader('Content-Type', asset.type);
      res.setHeader('Cache-Control', versioned ? 'public, max-age=31536000, immutable' : 'no-cache');
      res.setHeader('Vary', 'Accept-Encoding');
      const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
      if (gzip) res.setHeader('Content-Encoding', 'gzip');
      res.end(gzip ? asset.gzip : asset.body);
      return true;
    },
    serveIco(res) {
      res.setHeader('Content-Type', 'image/x-icon');
      // Not versioned (browsers ask for this URL itself), so kept a day rather than for good.
      res.setHeader('Cache-Control', 'public, max-age=86400');
      res.end(ico);
    },
    sizes() {
      return Object.fromEntries(
        [...assets].map(([name, a]) => [name, { bytes: a.body.length, gzipBytes: a.gzip.length }]),
      );
    },
  };
}
