/**
 * Step 3: run each definition's parsePayload on its readings, one sandbox call per definition
 * and job. preparseronly readings skip it: their payload already maps data point names to values.
 */
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { DefinitionRecord } from '../tenancy/types.ts';
import type { Failures } from './failures.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { ParsedReading, ResolvedReading } from './readings.ts';

export type { ParsedReading } from './readings.ts';

export function parseReadings(
  resolved: ResolvedReading[],
  deps: {
    sandbox: Sandbox;
    outcomes: OutcomeLog;
    /** A reading whose parsing threw outside the sandbox (the others go on). */
    failed: Failures['reading'];
  },
): ParsedReading[] {
  const { sandbox, outcomes } = deps;
  const parsed: ParsedReading[] = [];
  const byDefinition = new Map<string, ResolvedReading[]>();
  for (const r of resolved) {
    try {
      if (!r.direct) {
        const key = groupKey(r);
        const list = byDefinition.get(key) ?? [];
        list.push(r);
        byDefinition.set(key, list);
        continue;
      }
      const values = parseObject(r.payloadStr);
      if (values) {
        r.values = values;
        parsed.push(r as ParsedReading);
      } else
        outcomes.problem(
          r.item,
          'PREPARSER_BAD_RESULT',
          'the pre-parser payload is not an object of data point values',
          r.deviceName,
        );
    } catch (err) {
      deps.failed(r, err);
    }
  }
  for (const group of byDefinition.values()) {
    const first = group[0]!;
    const def = first.definition;
    const results = sandbox.run(
      {
        env: first.item.env,
        id: parserId(def),
        revision: def.version,
        source: def.parserSource,
        filename: `${def.spec.name}.js`,
      },
      group.map((r) => ({ payloadStr: r.payloadStr, payloadRaw: r.item.body })),
      { expectObject: true },
    );
    group.forEach((r, i) => {
      const result = results[i];
      if (!result) return;
      if (!result.ok)
        outcomes.problem(r.item, result.code, `${def.spec.name}: ${result.message}`, r.deviceName);
      else if (!isPlainObject(result.value))
        outcomes.problem(
          r.item,
          'PARSER_BAD_RESULT',
          `${def.spec.name}: parsePayload must return an object, got ${describe(result.value)}`,
          r.deviceName,
        );
      else {
        r.values = result.value;
        parsed.push(r as ParsedReading);
      }
    });
  }
  return parsed;
}

/**
 * One sandbox call per environment and definition: a public definition's parser runs in each
 * environment's own isolate and context, so its globals never carry one tenant's data to another.
 */
const groupKey = (r: ResolvedReading) =>
  `${r.item.env}\n${r.definition.isPublic ? 'public' : 'private'}\n${r.definition.spec.name}`;

/** The parser's identity within its environment's isolate. */
const parserId = (d: DefinitionRecord) => `def:${d.isPublic ? 'public' : 'private'}:${d.spec.name}`;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return isPlainObject(v) ? v : null;
  } catch {
    return null;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}
