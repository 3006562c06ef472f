/** Reading the audit log: `/audit/list`, newest first, filtered and paged. */
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, objectOf, str } from '../api/json-schema.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { operation, unchanged, type Operation } from './operation.ts';

export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1000;

const ENTRY_SCHEMA = {
  type: 'object',
  required: ['id', 'atUTC', 'actor', 'action', 'target', 'details'],
  properties: {
    id: { ...str, description: 'The entry’s id: `before` of a listing that goes on after it.' },
    atUTC: { type: 'string', format: 'date-time' },
    actor: { ...str, description: 'A username, token:<name> (a service token) or cli:<OS user>.' },
    action: {
      ...str,
      description: '<resource>.<verb>: device.create, definition.publish, alarm.acknowledge…',
    },
    target: str,
    before: { description: 'The record before the change (secrets masked); absent for a creation.' },
    after: { description: 'The record after the change (secrets masked); absent for a deletion.' },
    details: { type: 'object' },
  },
};

export function auditOperations(deps: { audit: AuditLog }): Operation[] {
  return [
    operation({
      path: '/audit/list',
      scope: 'admin',
      attributes: strictAttributes({
        actor: attr.string().optional(),
        action: attr
          .string()
          .optional()
          .describe('An action (device.update) or all of a resource’s (device).'),
        target: attr.string().optional(),
        startUTC: attr.number({ min: 0 }).optional().describe('UNIX seconds, inclusive.'),
        endUTC: attr.number({ min: 0 }).optional().describe('UNIX seconds, exclusive.'),
        before: attr.string().optional().describe('The `next` of the previous page.'),
        limit: attr.number({ integer: true, min: 1, max: AUDIT_MAX_LIMIT }).optional(),
      }),
      answer: {
        summary: 'The audit log, newest first: who changed what, when, before and after',
        data: objectOf({
          entries: arrayOf(ENTRY_SCHEMA),
          next: {
            type: ['string', 'null'],
            description: 'Pass as `before` for the next page; null at the end.',
          },
        }),
        errors: [],
      },
      async run(caller, a) {
        return unchanged(
          await deps.audit.list(caller.env, {
            limit: a.limit ?? AUDIT_DEFAULT_LIMIT,
            ...(a.actor === undefined ? {} : { actor: a.actor }),
            ...(a.action === undefined ? {} : { action: a.action }),
            ...(a.target === undefined ? {} : { target: a.target }),
            ...(a.startUTC === undefined ? {} : { startMs: a.startUTC * 1000 }),
            ...(a.endUTC === undefined ? {} : { endMs: a.endUTC * 1000 }),
            ...(a.before === undefined ? {} : { before: a.before }),
          }),
        );
      },
    }),
  ];
}
