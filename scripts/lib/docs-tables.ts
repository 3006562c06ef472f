/**
 * The documentation tables that must match the code: configuration (from the config schema) in
 * docs/configuration.md and error codes (from the catalogue) in docs/errors.md.
 * `node scripts/docs-tables.ts` rewrites them in place; a unit test fails when a file is out of date.
 */
import { describeConfig } from '../../src/config/load-config.ts';
import { ERROR_CODES } from '../../src/errors/catalogue.ts';

const esc = (s: string) => s.replace(/\|/g, '\\|');

export function configTable(): string {
  const rows = describeConfig().map(
    (r) => `| \`${r.env}\` | \`${esc(r.default)}\` | ${esc(r.description)} |`,
  );
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

export function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(
    ([code, e]) =>
      `| \`${code}\` | ${'atStart' in e ? 'refused at start' : e.status === 0 ? 'ingestion log' : e.status} | ${e.retryable ? 'yes' : 'no'} | ${esc(e.description)} |`,
  );
  return ['| Code | HTTP status | Retry helps | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export const TABLES: Record<string, () => string> = { config: configTable, errors: errorTable };

/** Which file (relative to the repository root) holds which generated tables. */
export const TABLE_FILES: Record<string, string[]> = {
  'docs/configuration.md': ['config'],
  'docs/errors.md': ['errors'],
};

/** Replaces each `<!-- name:start -->…<!-- name:end -->` block with the generated table. */
export function renderTables(text: string): string {
  let out = text;
  for (const [name, make] of Object.entries(TABLES)) {
    const re = new RegExp(`(<!-- ${name}:start -->)[\\s\\S]*?(<!-- ${name}:end -->)`);
    out = out.replace(re, (_m, a: string, b: string) => `${a}\n${make()}\n${b}`);
  }
  return out;
}
