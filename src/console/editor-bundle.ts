/**
 * The definition editor's module (assets/editor-src.js with CodeMirror 6), bundled by esbuild into
 * one minified ES module that the console serves itself: one request instead of the two dozen
 * modules CodeMirror is made of, each of which an import map (an inline script, under the CSP a
 * hash to keep) would have to name. It is built at set-up (`scripts/setup.mjs` runs this file) into
 * var/console-assets/, which git ignores, and again whenever what it is built from changes: its
 * first line holds the hash of its inputs (the entry, this file, package-lock.json). Where the file
 * is missing or stale when the console starts (a checkout whose set-up did not run, an image built
 * without it), the console builds it then, in memory if var/ cannot be written.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const ENTRY = join(here, 'assets', 'editor-src.js');
/** Where the bundle is kept (git-ignored). */
export const EDITOR_BUNDLE_PATH = join(root, 'var', 'console-assets', 'editor.js');
const MARK = '/* vigil-editor ';

/** The hash of what the bundle is made of. */
function inputsHash(): string {
  const hash = createHash('sha256');
  for (const file of [ENTRY, fileURLToPath(import.meta.url), join(root, 'package-lock.json')]) {
    hash.update(existsSync(file) ? readFileSync(file) : Buffer.alloc(0));
  }
  return hash.digest('hex').slice(0, 16);
}

function build(hash: string): Buffer {
  // esbuild's CommonJS entry, loaded only when a build is needed.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const out = esbuild.buildSync({
    entryPoints: [ENTRY],
    bundle: true,
    format: 'esm',
    minify: true,
    target: 'es2022',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const js = out.outputFiles[0]?.contents;
  if (!js) throw new Error('esbuild built no editor bundle');
  return Buffer.concat([Buffer.from(`${MARK}${hash} */\n`), Buffer.from(js)]);
}

/**
 * The bundle: the kept file when it is current, else built now (and kept when var/ can be
 * written). `built` tells which.
 */
export function editorBundle(): { body: Buffer; built: boolean } {
  const hash = inputsHash();
  if (existsSync(EDITOR_BUNDLE_PATH)) {
    const kept = readFileSync(EDITOR_BUNDLE_PATH);
    if (kept.subarray(0, MARK.length + hash.length).toString() === `${MARK}${hash}`)
      return { body: kept, built: false };
  }
  const body = build(hash);
  try {
    mkdirSync(dirname(EDITOR_BUNDLE_PATH), { recursive: true });
    writeFileSync(EDITOR_BUNDLE_PATH, body);
  } catch {
    // A read-only checkout: the bundle lives in memory for this process.
  }
  return { body, built: true };
}

// `node src/console/editor-bundle.ts` (scripts/setup.mjs): builds the bundle when it is missing or stale.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { body, built } = editorBundle();
  if (built)
    process.stderr.write(
      `[setup] built the console's editor bundle (${Math.round(body.length / 1024)} KB)\n`,
    );
}
