/**
 * Identifier rules of PRODUCT.md §3. These names end up in Redis keys, InfluxDB tags and Grafana
 * variables, so anything else is refused with a message that says what is allowed.
 */

const ENV_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const NAME_CHARS = '[A-Za-z0-9_.:-]';
const NAME = new RegExp(`^${NAME_CHARS}(?:[A-Za-z0-9_.: -]{0,126}${NAME_CHARS})?$`);
const USERNAME = /^[A-Za-z0-9_.@+-]{1,128}$/;

export type NameKind = 'environment' | 'device' | 'definition' | 'data point' | 'username' | 'key name';

/** The reason `value` is not a valid name of `kind`, or undefined when it is valid. */
export function nameProblem(kind: NameKind, value: string): string | undefined {
  switch (kind) {
    case 'environment':
      return ENV_NAME.test(value)
        ? undefined
        : `invalid environment name ${JSON.stringify(value)}: use 1-63 lowercase letters, digits and '-', starting with a letter or digit`;
    case 'device':
    case 'definition':
    case 'data point':
    case 'key name':
      return NAME.test(value)
        ? undefined
        : `invalid ${kind} name ${JSON.stringify(value)}: use 1-128 letters, digits, '_', '-', '.', ':' and inner spaces`;
    case 'username':
      return USERNAME.test(value)
        ? undefined
        : `invalid username ${JSON.stringify(value)}: use 1-128 letters, digits and '_', '.', '@', '+', '-'`;
  }
}

export const isValidName = (kind: NameKind, value: string): boolean => nameProblem(kind, value) === undefined;
