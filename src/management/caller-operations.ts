/**
 * `/tokens/current`: what the caller's own credentials are — the environment, who, what they may
 * do. The `vigil` command asks it once in its remote mode, to refuse a `--env` that is not the
 * token's rather than act on another environment than the one named.
 */
import { strictAttributes } from '../api/attributes.ts';
import { arrayOf, objectOf, str } from '../api/json-schema.ts';
import { SCOPES } from '../tenancy/types.ts';
import { operation, unchanged, type Operation } from './operation.ts';

export function callerOperations(): Operation[] {
  return [
    operation({
      path: '/tokens/current',
      scope: 'read',
      attributes: strictAttributes({}),
      answer: {
        summary: "The caller's environment, name and scopes",
        data: objectOf({ env: str, actor: str, scopes: arrayOf({ enum: [...SCOPES] }) }),
        errors: [],
      },
      run: (caller) =>
        Promise.resolve(unchanged({ env: caller.env, actor: caller.actor, scopes: [...caller.scopes] })),
    }),
  ];
}
