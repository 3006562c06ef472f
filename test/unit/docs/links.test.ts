import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The documents stand on their own: every relative link (and its #anchor) resolves inside the
 * repository, and none points at a document outside it.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const documents = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks (a `#` line in a shell block is no heading). */
function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .filter((line) => {
      if (/^\s*```/.test(line)) {
        fenced = !fenced;
        return false;
      }
      return !fenced;
    })
    .join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a document offers: heading slugs (repeats numbered as GitHub does) and `id="…"`. */
export function anchorsOf(text: string): Set<string> {
  const body = prose(text);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(heading ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of body.matchAll(/<a\s+id="([^"]+)"/g)) anchors.add(id ?? '');
  return anchors;
}

/** Relative link targets of a document: `[text](target)`, without web or mail addresses. */
function linksOf(text: string): string[] {
  const targets = [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '');
  return targets.filter((t) => !/^[a-z]+:/i.test(t));
}

describe('documentation links', () => {
  it('computes anchors as GitHub does', () => {
    expect(slug('What changed on 2026-11-24, measured')).toBe('what-changed-on-2026-11-24-measured');
    expect(slug('Schema and the rollup (downsampling) query')).toBe(
      'schema-and-the-rollup-downsampling-query',
    );
    expect(anchorsOf('## A\n```sh\n# not a heading\n```\n## A\n<a id="x"></a>')).toEqual(
      new Set(['a', 'a-1', 'x']),
    );
  });

  for (const doc of documents) {
    it(`${doc}: every relative link and anchor resolves`, () => {
      const text = readFileSync(join(root, doc), 'utf8');
      const broken: string[] = [];
      for (const target of linksOf(text)) {
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(root, doc) : join(root, dirname(doc), path);
        if (!existsSync(file)) {
          broken.push(`${target}: no file ${relative(root, file)}`);
          continue;
        }
        if (anchor === undefined || !file.endsWith('.md')) continue;
        if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${target}: no anchor #${anchor}`);
      }
      expect(broken).toEqual([]);
    });

    it(`${doc}: points at no document outside the repository`, () => {
      const text = readFileSync(join(root, doc), 'utf8');
      const outside = text
        .split('\n')
        .filter((line) => /PRODUCT\.md|NOTES\.md|spec\/interface|issue #[0-9]|\.\.\/shared/.test(line));
      expect(outside).toEqual([]);
    });
  }
});
