/**
 * How rules read in event messages and wherever a status is explained: 'Above 25 °C', a rule's own
 * description, ' for 10 min' after a rule that waits. Pure.
 */
import { describeDuration } from './alarm-conditions.ts';
import { DATA_TYPE_INFO, formatNumber } from './data-types.ts';
import type { DataType, Locale, ThresholdRule } from './types.ts';

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
