/**
 * Reads definition files from disk: the YAML (validated by the domain) and its parser file (path
 * relative to the YAML), which must compile. Pre-parser files likewise. Used by the CLI and
 * provisioning; every problem is an INVALID_INPUT error naming the file (and line:column where
 * there is one). Compiling needs node --no-node-snapshot (isolated-vm).
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { parseDefinitionYaml } from '../domain/definition-spec.ts';
import { AppError } from '../errors/app-error.ts';
import { checkSyntax } from '../sandbox/check-syntax.ts';
import type { ParserFormat } from '../domain/types.ts';
import type { LoadedDefinition } from './provisioning-apply.ts';

export interface DefinitionFiles extends LoadedDefinition {
  yamlPath: string;
  parserPath: string;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new AppError('INVALID_INPUT', `cannot read ${what} ${path}: ${reason}`);
  }
}

/** Reads and checks a parser or pre-parser source; the message carries file:line:column. */
export async function loadParserFile(path: string, format?: ParserFormat): Promise<string> {
  const source = await readText(path, 'parser file');
  const check = checkSyntax(source, basename(path), format);
  if (!check.ok) throw new AppError('INVALID_INPUT', check.message);
  return source;
}

/** Reads a definition YAML and its parser; throws INVALID_INPUT with the first problem. */
export async function loadDefinitionFiles(yamlPath: string): Promise<DefinitionFiles> {
  const text = await readText(yamlPath, 'definition file');
  const { spec, parserFile } = parseDefinitionYaml(text, basename(yamlPath));
  const parserPath = resolve(dirname(yamlPath), parserFile);
  const parserSource = await loadParserFile(parserPath, spec.parserFormat);
  return { spec, parserSource, yamlPath, parserPath };
}
