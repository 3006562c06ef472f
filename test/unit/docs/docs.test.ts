import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderTables, TABLE_FILES } from '../../../scripts/lib/docs-tables.ts';

const read = (file: string) => readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8');

describe('generated documentation tables', () => {
  for (const [file, names] of Object.entries(TABLE_FILES)) {
    it(`${file} has its tables generated from the code (run: node scripts/docs-tables.ts)`, () => {
      const text = read(file);
      for (const name of names) expect(text).toContain(`<!-- ${name}:start -->`);
      expect(renderTables(text)).toBe(text);
    });
  }
});

describe('README', () => {
  it('shows the two quick-start commands', () => {
    const readme = read('README.md');
    expect(readme).toContain('npm run demo');
    expect(readme).toContain('npm test');
  });
});
