/**
 * Identifier rules (docs/domain.md#names) as the tenancy applies them; the patterns themselves live in
 * the domain (src/domain/identifiers.ts), so the CLI, provisioning and the service agree.
 */
import {
  ENV_NAME_PATTERN,
  nameProblem as domainNameProblem,
  type NameKind as DomainNameKind,
} from '../domain/identifiers.ts';

export type NameKind = 'environment' | DomainNameKind;

/** The reason `value` is not a valid name of `kind`, or undefined when it is valid. */
export function nameProblem(kind: NameKind, value: string): string | undefined {
  if (kind !== 'environment') return domainNameProblem(kind, value);
  return ENV_NAME_PATTERN.test(value)
    ? undefined
    : `invalid environment name ${JSON.stringify(value)}: use 1-63 lowercase letters, digits and '-', starting with a letter or digit`;
}

export const isValidName = (kind: NameKind, value: string): boolean => nameProblem(kind, value) === undefined;
