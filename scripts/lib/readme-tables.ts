/**
 * The README tables that must match the code: configuration (from the config schema) and error
 * codes (from the catalogue). `node scripts/readme-tables.ts` rewrites them in place; a unit test
 * fails when README.md is out of date.
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
      `| \`${code}\` | ${e.status === 0 ? 'ingestion log' : e.status} | ${e.retryable ? 'yes' : 'no'} | ${esc(e.description)} |`,
  );
  return ['| Code | HTTP status | Retry helps | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export const TABLES: Record<string, () => string> = { config: configTable, errors: errorTable };

/** Replaces each `<!-- name:start -->…<!-- name:end -->` block with the generated table. */
export function renderTables(readme: string): string {
  let out = readme;
  for (const [name, make] of Object.entries(TABLES)) {
    const re = new RegExp(`(<!-- ${name}:start -->)[\\s\\S]*?(<!-- ${name}:end -->)`);
    out = out.replace(re, (_m, a: string, b: string) => `${a}\n${make()}\n${b}`);
  }
  return out;
}
