/**
 * Reads a device threshold override given on the command line or in a provisioning file: either a
 * rule list or `{rules, hysteresis}`. Each rule has a status and exactly one of above / below
 * (numbers) / equals.
 */
import { z } from 'zod';
import type { ThresholdSet } from '../domain/types.ts';

const ruleStatus = z.enum(['INFO', 'WARNING', 'ERROR', 'CRITICAL']);
const finite = (what: string) =>
  z.number({ error: `${what} must be a number` }).refine(Number.isFinite, `${what} must be a finite number`);

const rule = z
  .object({
    status: ruleStatus,
    above: finite('above').optional(),
    below: finite('below').optional(),
    equals: z.union([z.string(), z.number(), z.boolean()]).optional(),
    description: z.string().max(200).optional(),
  })
  .strict()
  .refine(
    (r) => [r.above, r.below, r.equals].filter((v) => v !== undefined).length === 1,
    'each rule needs exactly one of above, below or equals',
  );

const set = z.object({ rules: z.array(rule), hysteresis: finite('hysteresis').min(0).default(0) }).strict();

/** The override, or a one-line reason why `input` is not one. */
export function parseThresholdSet(
  input: unknown,
): { ok: true; value: ThresholdSet } | { ok: false; message: string } {
  const candidate = Array.isArray(input) ? { rules: input } : input;
  const parsed = set.safeParse(candidate);
  if (parsed.success) {
    const rules = parsed.data.rules.map((r) =>
      Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)),
    );
    return {
      ok: true,
      value: { rules: rules as unknown as ThresholdSet['rules'], hysteresis: parsed.data.hysteresis },
    };
  }
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return { ok: false, message: `invalid thresholds: ${where}${issue?.message ?? 'not a rule list'}` };
}
