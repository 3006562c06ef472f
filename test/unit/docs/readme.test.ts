import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderTables, TABLES } from '../../../scripts/lib/readme-tables.ts';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('has the configuration and error tables generated from the code (run: node scripts/readme-tables.ts)', () => {
    for (const name of Object.keys(TABLES)) expect(readme).toContain(`<!-- ${name}:start -->`);
    expect(renderTables(readme)).toBe(readme);
  });

  it('shows the two quick-start commands', () => {
    expect(readme).toContain('npm run demo');
    expect(readme).toContain('npm test');
  });
});
