/**
 * Reads a device definition YAML file (docs/domain.md#definition-files) into a DefinitionSpec. Every problem is an
 * INVALID_INPUT error that names the file, the field path and, where the YAML shows it, the line:
 * `comfort.yaml: dataPoints[2].dataType: unknown data type "temp"; expected one of … (line 12, column 15)`.
 */
import { LineCounter, parseDocument, stringify } from 'yaml';
import type { Document } from 'yaml';
import { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import { nameProblem } from './identifiers.ts';
import { checkThresholdSet, publicRule, publicRules } from './thresholds.ts';
import { parseSourcePath } from './data-point-paths.ts';
import { RADIO_FIELDS } from './network-messages.ts';
import { DATA_TYPES, PARSER_FORMATS } from './types.ts';
import type { DataPointSpec, DefinitionSpec } from './types.ts';

const RULE_STATUSES = ['INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;

/** Zod's error option: 'is required' for a missing field, else what the field must be. */
const need =
  (what: string) =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? 'is required' : what;

const nameOf = (kind: 'definition' | 'data point') =>
  z.string({ error: need('must be text') }).superRefine((value, ctx) => {
    const problem = nameProblem(kind, value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

const text = (max: number) =>
  z
    .string({ error: need('must be text') })
    .trim()
    .min(1, 'must not be empty')
    .max(max);

const dataPointSchema = z.strictObject({
  name: nameOf('data point'),
  displayName: text(128).nullish(),
  dataType: z.enum(DATA_TYPES, {
    error: (issue) =>
      `unknown data type ${JSON.stringify(issue.input) ?? '(missing)'}; expected one of ${DATA_TYPES.join(', ')}`,
  }),
  hysteresis: z
    .number({ error: 'must be a number ≥ 0' })
    .refine(Number.isFinite, 'must be a finite number')
    .min(0, 'must be a number ≥ 0')
    .nullish(),
  thresholds: z.array(z.unknown(), { error: 'must be a list of rules' }).nullish(),
  stale: z.unknown().optional(),
  source: text(256)
    .superRefine((value, ctx) => {
      const path = parseSourcePath(value);
      if ('problem' in path)
        ctx.addIssue({ code: 'custom', message: `not a path into the parser's result: ${path.problem}` });
    })
    .nullish(),
  radio: z.enum(RADIO_FIELDS, { error: `must be one of ${RADIO_FIELDS.join(', ')}` }).nullish(),
});

const definitionSchema = z.strictObject({
  name: nameOf('definition'),
  manufacturer: text(128),
  version: z
    .union([z.string().trim().min(1), z.number()], { error: need('must be text or a number') })
    .transform(String),
  icon: text(64).nullish(),
  parser: text(256),
  parserFormat: z.enum(PARSER_FORMATS, { error: `must be one of ${PARSER_FORMATS.join(', ')}` }).nullish(),
  availability: z
    .strictObject({
      timeoutMinutes: z
        .number({ error: 'must be a number of minutes > 0' })
        .positive('must be > 0')
        .nullish(),
      status: z.enum(RULE_STATUSES, { error: `must be one of ${RULE_STATUSES.join(', ')}` }).nullish(),
    })
    .nullish(),
  dataPoints: z
    .array(dataPointSchema, { error: 'must be a list of data points' })
    .min(1, 'needs at least one data point'),
});

/** A definition edited outside a file (the console, the management API): `parser` may be left out. */
const draftSchema = definitionSchema.extend({ parser: text(256).optional() });

type Fail = (path: readonly PropertyKey[], message: string) => never;

/**
 * Parses and validates a definition; `fileLabel` prefixes every error message. Optional fields
 * may be left empty (`icon:`), which counts as absent.
 */
export function parseDefinitionYaml(
  text: string,
  fileLabel = 'definition',
  opts: { parserOptional?: boolean } = {},
): { spec: DefinitionSpec; parserFile: string } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const syntax = doc.errors[0];
  if (syntax) {
    const { line, col } = lines.linePos(syntax.pos[0]);
    throw new AppError('INVALID_INPUT', `${fileLabel}:${line}:${col}: YAML syntax error: ${syntax.message}`, {
      details: { line, column: col },
    });
  }
  const fail: Fail = (path, message) => {
    const at = positionOf(doc, lines, path);
    const where = `${describePath(path)}${message}${at ? ` (line ${at.line}, column ${at.column})` : ''}`;
    throw new AppError('INVALID_INPUT', `${fileLabel}: ${where}`, {
      details: { field: describePath(path).replace(/: $/, ''), ...at },
    });
  };
  const data: unknown = doc.toJS();
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return fail([], 'must be a YAML mapping with name, manufacturer, version, parser and dataPoints');
  }
  const parsed = (opts.parserOptional ? draftSchema : definitionSchema).safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}`
        : issue.message;
    return fail(issue.path, message);
  }
  const { name, manufacturer, version, icon, parser, parserFormat, availability } = parsed.data;
  const spec: DefinitionSpec = {
    name,
    manufacturer,
    version,
    dataPoints: dataPointSpecs(parsed.data.dataPoints, fail),
  };
  if (icon) spec.icon = icon;
  if (parserFormat === 'ts013') spec.parserFormat = parserFormat;
  if (availability) {
    spec.availability = {};
    if (availability.timeoutMinutes) spec.availability.timeoutMinutes = availability.timeoutMinutes;
    if (availability.status) spec.availability.status = availability.status;
  }
  return { spec, parserFile: parser ?? `${name}.js` };
}

/**
 * A definition as YAML, in the form of a definition file (docs/domain.md#definition-files), with
 * `parser` naming `parserFile`: what the console's editor shows and `parseDefinitionYaml` reads back
 * to the same spec.
 */
export function definitionYaml(spec: DefinitionSpec, parserFile = `${spec.name}.js`): string {
  const written = (dp: DataPointSpec) =>
    publicRules({
      rules: dp.thresholds,
      hysteresis: dp.hysteresis,
      ...(dp.stale ? { stale: dp.stale } : {}),
    });
  const { name, manufacturer, version, icon, availability, dataPoints, parserFormat } = spec;
  return stringify(
    {
      name,
      manufacturer,
      version,
      ...(icon ? { icon } : {}),
      parser: parserFile,
      ...(parserFormat ? { parserFormat } : {}),
      ...(availability && Object.keys(availability).length > 0 ? { availability } : {}),
      dataPoints: dataPoints.map((dp) => ({
        name: dp.name,
        ...(dp.displayName !== dp.name ? { displayName: dp.displayName } : {}),
        dataType: dp.dataType,
        ...(dp.hysteresis ? { hysteresis: dp.hysteresis } : {}),
        ...(dp.thresholds.length > 0 ? { thresholds: dp.thresholds.map(publicRule) } : {}),
        ...(written(dp).stale ? { stale: written(dp).stale } : {}),
        ...(dp.source ? { source: dp.source } : {}),
        ...(dp.radio ? { radio: dp.radio } : {}),
      })),
    },
    { lineWidth: 0 },
  );
}

/** Data points with defaults filled in; duplicate names and bad thresholds fail. */
function dataPointSpecs(dataPoints: z.infer<typeof dataPointSchema>[], fail: Fail): DataPointSpec[] {
  const seen = new Map<string, number>();
  return dataPoints.map((dp, index) => {
    const earlier = seen.get(dp.name);
    if (earlier !== undefined) {
      fail(
        ['dataPoints', index, 'name'],
        `duplicate data point name "${dp.name}" (also dataPoints[${earlier}])`,
      );
    }
    seen.set(dp.name, index);
    if (dp.source && dp.radio) {
      fail(
        ['dataPoints', index, 'radio'],
        'a data point takes its value from source or from radio, not both',
      );
    }
    const checked = checkThresholdSet(
      { rules: dp.thresholds ?? [], hysteresis: dp.hysteresis, stale: dp.stale },
      dp.dataType,
    );
    if (!checked.ok) {
      const path = checked.problem.path.map((p) => (p === 'rules' ? 'thresholds' : p));
      return fail(['dataPoints', index, ...path], checked.problem.message);
    }
    const spec: DataPointSpec = {
      name: dp.name,
      displayName: dp.displayName ?? dp.name,
      dataType: dp.dataType,
      hysteresis: checked.value.hysteresis,
      thresholds: checked.value.rules,
    };
    if (checked.value.stale) spec.stale = checked.value.stale;
    if (dp.source) spec.source = dp.source;
    if (dp.radio) spec.radio = dp.radio;
    return spec;
  });
}

/** `dataPoints[2].dataType: ` for ['dataPoints', 2, 'dataType']; empty for the root. */
function describePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '';
  const joined = path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
  return `${joined}: `;
}

/** Where the deepest node of `path` the YAML has starts, or undefined. */
function positionOf(
  doc: Document,
  lines: LineCounter,
  path: readonly PropertyKey[],
): { line: number; column: number } | undefined {
  for (let depth = path.length; depth > 0; depth -= 1) {
    const node: unknown = doc.getIn(path.slice(0, depth) as (string | number)[], true);
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) {
      const { line, col } = lines.linePos(range[0]);
      return { line, column: col };
    }
  }
  return undefined;
}
