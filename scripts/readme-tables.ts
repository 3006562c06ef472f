/** Regenerates the configuration and error-code tables in README.md from the code. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderTables } from './lib/readme-tables.ts';

const path = new URL('../README.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = renderTables(before);
writeFileSync(path, after);
process.stdout.write(before === after ? 'README tables already current\n' : 'README tables updated\n');
