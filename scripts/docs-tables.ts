/** Regenerates the configuration and error-code tables in docs/ from the code. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderTables, TABLE_FILES } from './lib/docs-tables.ts';

for (const file of Object.keys(TABLE_FILES)) {
  const path = new URL(`../${file}`, import.meta.url);
  const before = readFileSync(path, 'utf8');
  const after = renderTables(before);
  writeFileSync(path, after);
  process.stdout.write(`${file}: ${before === after ? 'tables already current' : 'tables updated'}\n`);
}
