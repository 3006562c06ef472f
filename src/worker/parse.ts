/**
 * Step 3: run each definition's parser on its readings, one sandbox call per definition and job:
 * `parsePayload(payloadStr, payloadRaw)`, or a codec's `decodeUplink({bytes, fPort, recvTime})`
 * (`parserFormat: ts013`). preparseronly readings skip it: their payload already maps data point
 * names to values. So does a network server's message without a frame payload (a status report, a
 * frame of MAC commands): it has only radio metadata.
 */
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { DefinitionRecord } from '../tenancy/types.ts';
import type { Failures } from './failures.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { ParsedReading, ResolvedReading } from './readings.ts';

export type { ParsedReading } from './readings.ts';

interface ParseDeps {
  sandbox: Sandbox;
  outcomes: OutcomeLog;
  /** A reading whose parsing threw outside the sandbox (the others go on). */
  failed: Failures['reading'];
}

export function parseReadings(resolved: ResolvedReading[], deps: ParseDeps): ParsedReading[] {
  const parsed: ParsedReading[] = [];
  const byDefinition = new Map<string, ResolvedReading[]>();
  for (const r of resolved) {
    try {
      if (r.network && r.network.bytesHex === undefined) {
        r.values = NO_VALUES;
        parsed.push(r as ParsedReading);
      } else if (!r.direct) {
        const key = groupKey(r);
        const list = byDefinition.get(key) ?? [];
        list.push(r);
        byDefinition.set(key, list);
      } else readDirect(r, parsed, deps.outcomes);
    } catch (err) {
      deps.failed(r, err);
    }
  }
  for (const group of byDefinition.values()) runParser(group, parsed, deps);
  return parsed;
}

/** A preparseronly reading: its payload is the data point values themselves. */
function readDirect(r: ResolvedReading, parsed: ParsedReading[], outcomes: OutcomeLog): void {
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
}

/** One sandbox call for the readings of one definition in one environment. */
function runParser(all: ResolvedReading[], parsed: ParsedReading[], deps: ParseDeps): void {
  const { sandbox, outcomes } = deps;
  const first = all[0]!;
  const def = first.definition;
  const codec = def.spec.parserFormat === 'ts013';
  const group = codec ? withFrames(all, outcomes) : all;
  if (group.length === 0) return;
  const results = sandbox.run(
    {
      env: first.item.env,
      id: parserId(def),
      revision: def.version,
      source: def.parserSource,
      filename: `${def.spec.name}.js`,
      ...(codec ? { format: 'ts013' as const } : {}),
    },
    codec ? group.map(codecInput) : group.map((r) => ({ payloadStr: r.payloadStr, payloadRaw: r.item.body })),
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
        `${def.spec.name}: ${codec ? 'decodeUplink' : 'parsePayload'} must return an object, got ${describe(result.value)}`,
        r.deviceName,
      );
    else {
      if (result.warnings) outcomes.warned(r.item, result.warnings);
      r.values = result.value;
      parsed.push(r as ParsedReading);
    }
  });
}

const NO_VALUES: Record<string, unknown> = Object.freeze({});

/** The readings a codec can decode: a network server's frames; the others are logged. */
function withFrames(readings: ResolvedReading[], outcomes: OutcomeLog): ResolvedReading[] {
  if (readings.every((r) => r.network)) return readings;
  return readings.filter((r) => {
    if (r.network) return true;
    outcomes.problem(
      r.item,
      'PARSER_ERROR',
      `${r.definition.spec.name}: its parser is a LoRaWAN codec (parserFormat: ts013), which decodes uplinks of a network server (/tts/, /chirpstack/) only`,
      r.deviceName,
    );
    return false;
  });
}

/** What a codec's decodeUplink is given of a network server's frame. */
const codecInput = (r: ResolvedReading) => ({
  uplink: { bytesHex: r.payloadStr, fPort: r.network!.radio.fPort ?? 0, recvTimeMs: r.timeMs },
});

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
