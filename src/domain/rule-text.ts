/**
 * How rules read in event messages and wherever a status is explained: 'Above 25 °C', a rule's own
 * description, ' for 10 min' after a rule that waits, and the rules a value is waiting on. Pure.
 */
import { describeDuration } from './alarm-conditions.ts';
import { DATA_TYPE_INFO, formatNumber } from './data-types.ts';
import type { DataType, Locale, RuleStatus, ThresholdRule, ThresholdSet } from './types.ts';

/**
 * The rule's text in event messages: its `description`, else 'Above 25 °C', 'Below 15 °C',
 * 'Equals open'. Limits are shown as written (25, not 25.0) with the locale's decimal separator.
 */
export function ruleDescription(rule: ThresholdRule, dataType: DataType, locale: Locale): string {
  if (rule.description !== undefined && rule.description !== '') return rule.description;
  const units = DATA_TYPE_INFO[dataType].units;
  if (rule.above !== undefined) return `Above ${formatNumber(rule.above, locale, null)}${units}`;
  if (rule.below !== undefined) return `Below ${formatNumber(rule.below, locale, null)}${units}`;
  if (typeof rule.equals === 'number') return `Equals ${formatNumber(rule.equals, locale, null)}${units}`;
  if (rule.equals !== undefined) return `Equals ${String(rule.equals)}`;
  return rule.status;
}

/**
 * The rule's text in a status change's event message: ruleDescription, followed by ` for 10 min`
 * when the rule waits (`Overheating for 10 min`).
 */
export function ruleEventText(rule: ThresholdRule, dataType: DataType, locale: Locale): string {
  const text = ruleDescription(rule, dataType, locale);
  return rule.forMs ? `${text} for ${describeDuration(rule.forMs)}` : text;
}

/** A rule a value meets that waits for its duration, as shown (definition test, console). */
export interface WaitingRule {
  ruleIndex: number;
  status: RuleStatus;
  /** The rule's event text (`Overheating for 10 min`). */
  text: string;
  forMs: number;
}

/**
 * The rules in `matched` (rule indexes a value meets, in preference order: thresholds.ts
 * possibleMatches) that wait and come before the first that applies at once: the statuses that
 * would follow, most severe first, if the value held.
 */
export function waitingRules(
  matched: readonly number[],
  set: ThresholdSet,
  dataType: DataType,
  locale: Locale,
): WaitingRule[] {
  const out: WaitingRule[] = [];
  for (const index of matched) {
    const rule = set.rules[index]!;
    if (!rule.forMs) break;
    out.push({
      ruleIndex: index,
      status: rule.status,
      text: ruleEventText(rule, dataType, locale),
      forMs: rule.forMs,
    });
  }
  return out;
}
