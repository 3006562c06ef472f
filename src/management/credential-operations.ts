/**
 * Managing an environment's credentials: API keys (what devices send to the gateway and MQTT) and
 * service tokens (bearer tokens for automation, with the scopes they were created with). A key or
 * token is answered once, by the operation that creates it, and is never in a listing or the audit
 * log. The rules are the CLI's (tenancy/admin-credentials.ts): rotating a key gives its successor
 * and lets the old key work `overlapMinutes` more, then refuses it everywhere, like a revoked one.
 * A key may carry an auto-create rule (tenancy/admin-api-key-rules.ts): the devices it may create
 * when an uplink names one Vigil does not know; `/apikeys/update` sets, changes or clears it.
 */
import { z } from 'zod';
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str, ts } from '../api/json-schema.ts';
import { AppError } from '../errors/app-error.ts';
import {
  checkScopes,
  MAX_ROTATION_OVERLAP_MS,
  type CredentialAdmin,
  type PublicToken,
} from '../tenancy/admin-credentials.ts';
import { AUTO_CREATE_MAX_DEVICES, SCOPES } from '../tenancy/types.ts';
import { labelsAttribute } from './device-operations.ts';
import { LABELS_SCHEMA } from './device-shape.ts';
import { changed, operation, unchanged, type Operation } from './operation.ts';

export interface CredentialOperationDeps {
  credentials: Pick<
    CredentialAdmin,
    | 'createApiKey'
    | 'updateApiKey'
    | 'listApiKeys'
    | 'revokeApiKey'
    | 'rotateApiKey'
    | 'createToken'
    | 'listTokens'
    | 'revokeToken'
  >;
}

const MAX_OVERLAP_MINUTES = MAX_ROTATION_OVERLAP_MS / 60_000;
const SCOPES_TEXT = 'read, read,write or read,write,admin';

/** Whether `names` are scopes a token may have (each needs the ones before it). */
const areScopes = (names: readonly string[]): boolean => {
  try {
    checkScopes(names);
    return true;
  } catch {
    return false;
  }
};

/** Scopes as a list (`["read","write"]`) or as the CLI takes them (`"read,write"`). */
const scopesAttribute = () =>
  z
    .preprocess(
      (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()) : v),
      z.array(attr.oneOf(SCOPES), { error: SCOPES_TEXT }).refine(areScopes, { error: SCOPES_TEXT }),
    )
    .describe(`The token’s scopes: ${SCOPES_TEXT} (a list, or the names separated by commas).`);

/** A time: UNIX seconds, or ISO 8601 text with its offset (`2027-01-01T00:00:00Z`). */
const timeAttribute = () =>
  z.union([z.number().min(0), z.iso.datetime({ offset: true })], {
    error: 'UNIX seconds or an ISO 8601 time with its offset',
  });

const timeMs = (t: number | string): number => (typeof t === 'number' ? t * 1000 : Date.parse(t));

const idAttribute = () => attr.string().describe('The id, or the name, of the credential.');

/** An auto-create rule as the operations take it. */
const autoCreateAttribute = () =>
  z
    .strictObject({
      definitionName: attr.string().describe('The definition of the devices it creates.'),
      definitionIsPublic: attr.boolean().optional().describe('A public definition; absent: false.'),
      labels: labelsAttribute()
        .optional()
        .describe('Labels each device created gets besides its devEui (which is the uplink’s).'),
      maxDevices: attr
        .number({ integer: true, min: 1, max: AUTO_CREATE_MAX_DEVICES })
        .describe('Most devices the key creates, its predecessors’ by rotation counted.'),
    })
    .describe('What the key may create of devices it does not know (LoRaWAN uplinks).');

const AUTO_CREATE_SCHEMA = {
  ...objectOf({ definitionName: str, definitionIsPublic: bool, labels: LABELS_SCHEMA, maxDevices: int }),
  type: ['object', 'null'],
  description: 'The auto-create rule; null: the key creates no device.',
};
const API_KEY_SCHEMA = objectOf({
  id: str,
  name: str,
  createdUTC: str,
  expiresUTC: ts,
  autoCreate: AUTO_CREATE_SCHEMA,
  devicesCreated: { ...int, description: 'Devices its rule created, its predecessors’ by rotation counted.' },
  revision: int,
});
const TOKEN_SCHEMA = objectOf({
  id: str,
  name: str,
  scopes: arrayOf({ enum: [...SCOPES] }),
  createdUTC: str,
  expiresUTC: ts,
  lastUsedUTC: { ...ts, description: 'The last use (noted at most once a minute); null: never used.' },
});
const REVOKED_SCHEMA = objectOf({ id: str, name: str, revoked: bool });

/** A token as the audit log keeps it: what it is, not when it was last used. */
const auditedToken = ({ lastUsedUTC: _used, ...t }: PublicToken) => t;

export function credentialOperations(deps: CredentialOperationDeps): Operation[] {
  const { credentials } = deps;
  return [
    operation({
      path: '/apikeys/create',
      scope: 'admin',
      attributes: strictAttributes({
        name: attr.string().optional().describe('A name to find the key by; `key-<id>` when absent.'),
        autoCreate: autoCreateAttribute().optional(),
      }),
      answer: {
        summary: 'Create an API key for the gateway and MQTT (the key is in this answer only)',
        data: objectOf({ id: str, name: str, createdUTC: str, autoCreate: AUTO_CREATE_SCHEMA, key: str }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const created = await credentials.createApiKey(caller.env, a.name, a.autoCreate);
        const { key: _key, ...listed } = created;
        return changed(created, {
          action: 'apikey.create',
          target: created.name,
          after: { ...listed, expiresUTC: null, devicesCreated: 0, revision: 1 },
        });
      },
    }),
    operation({
      path: '/apikeys/update',
      scope: 'admin',
      attributes: strictAttributes({
        id: idAttribute(),
        autoCreate: autoCreateAttribute()
          .nullable()
          .describe('The new rule (it replaces the key’s), or null: the key creates no more devices.'),
        revision: attr
          .number({ integer: true, min: 1 })
          .optional()
          .describe(
            'The revision the change is based on; 409 CONFLICT when the key has another. Absent: last writer wins.',
          ),
      }),
      answer: {
        summary: 'Set, change or clear an API key’s auto-create rule',
        data: API_KEY_SCHEMA,
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const {
          before,
          after,
          changed: moved,
        } = await credentials.updateApiKey(caller.env, a.id, {
          autoCreate: a.autoCreate,
          ...(a.revision === undefined ? {} : { revision: a.revision }),
        });
        if (!moved) return unchanged(after);
        const verb = before.autoCreate === null ? 'set' : after.autoCreate === null ? 'cleared' : 'changed';
        return changed(after, {
          action: 'apikey.update',
          target: after.name,
          before,
          after,
          details: { autoCreate: verb },
        });
      },
    }),
    operation({
      path: '/apikeys/list',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: {
        summary: 'The API keys (never the keys themselves), by name',
        data: arrayOf(API_KEY_SCHEMA),
        errors: [],
      },
      async run(caller) {
        return unchanged(await credentials.listApiKeys(caller.env));
      },
    }),
    operation({
      path: '/apikeys/revoke',
      scope: 'admin',
      attributes: strictAttributes({ id: idAttribute() }),
      answer: {
        summary: 'Revoke an API key at once (within VIGIL_CREDENTIAL_CACHE_MS everywhere)',
        data: REVOKED_SCHEMA,
        errors: ['404'],
      },
      async run(caller, a) {
        const revoked = await credentials.revokeApiKey(caller.env, a.id);
        return changed(
          { id: revoked.id, name: revoked.name, revoked: true },
          { action: 'apikey.revoke', target: revoked.name, before: revoked },
        );
      },
    }),
    operation({
      path: '/apikeys/rotate',
      scope: 'admin',
      attributes: strictAttributes({
        id: idAttribute(),
        overlapMinutes: attr
          .number({ min: 0, max: MAX_OVERLAP_MINUTES })
          .describe('How long the old key keeps working beside the new one; 0: revoked at once.'),
        name: attr
          .string()
          .optional()
          .describe('The new key’s name; absent: the old name with a suffix (`-r2`, `-r3`…).'),
      }),
      answer: {
        summary:
          'Replace an API key: a new key (in this answer only), the old one working for overlapMinutes more',
        data: objectOf({
          id: str,
          name: str,
          createdUTC: str,
          key: str,
          previous: objectOf({
            id: str,
            name: str,
            expiresUTC: { ...str, description: 'When the old key stops working (now for an overlap of 0).' },
          }),
        }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const overlapMs = Math.round(a.overlapMinutes * 60_000);
        const { created, before, after } = await credentials.rotateApiKey(
          caller.env,
          a.id,
          overlapMs,
          a.name,
        );
        const expiresUTC = after?.expiresUTC ?? new Date(caller.nowMs).toISOString();
        return changed(
          {
            id: created.id,
            name: created.name,
            createdUTC: created.createdUTC,
            key: created.key,
            previous: { id: before.id, name: before.name, expiresUTC },
          },
          {
            action: 'apikey.rotate',
            target: before.name,
            before,
            ...(after ? { after } : {}),
            details: { newId: created.id, newName: created.name, oldExpiresUTC: expiresUTC },
          },
        );
      },
    }),
    operation({
      path: '/tokens/create',
      scope: 'admin',
      attributes: strictAttributes({
        name: attr.string().optional().describe('A name to find the token by; `token-<id>` when absent.'),
        scopes: scopesAttribute(),
        expiresUTC: timeAttribute()
          .nullable()
          .optional()
          .describe('When the token stops working, in the future; absent or null: never.'),
      }),
      answer: {
        summary: 'Create a service token for automation (the token is in this answer only)',
        data: objectOf({
          id: str,
          name: str,
          scopes: arrayOf({ enum: [...SCOPES] }),
          createdUTC: str,
          expiresUTC: ts,
          token: str,
        }),
        errors: ['409'],
      },
      async run(caller, a) {
        const expiresMs = a.expiresUTC === undefined || a.expiresUTC === null ? 0 : timeMs(a.expiresUTC);
        if (expiresMs !== 0 && expiresMs <= caller.nowMs) {
          throw new AppError('INVALID_ATTRIBUTE', 'The attribute expiresUTC must be a time in the future.', {
            details: { attribute: 'expiresUTC' },
          });
        }
        const created = await credentials.createToken(caller.env, a.name, expiresMs, checkScopes(a.scopes));
        const { token: _token, ...rest } = created;
        return changed(
          {
            id: created.id,
            name: created.name,
            scopes: created.scopes,
            createdUTC: created.createdUTC,
            expiresUTC: created.expiresUTC,
            token: created.token,
          },
          { action: 'token.create', target: created.name, after: rest },
        );
      },
    }),
    operation({
      path: '/tokens/list',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: {
        summary: 'The service tokens (never the tokens themselves) with their last use, by name',
        data: arrayOf(TOKEN_SCHEMA),
        errors: [],
      },
      async run(caller) {
        return unchanged(await credentials.listTokens(caller.env));
      },
    }),
    operation({
      path: '/tokens/revoke',
      scope: 'admin',
      attributes: strictAttributes({ id: idAttribute() }),
      answer: {
        summary: 'Revoke a service token at once (within VIGIL_CREDENTIAL_CACHE_MS)',
        data: REVOKED_SCHEMA,
        errors: ['404'],
      },
      async run(caller, a) {
        const revoked = await credentials.revokeToken(caller.env, a.id);
        return changed(
          { id: revoked.id, name: revoked.name, revoked: true },
          { action: 'token.revoke', target: revoked.name, before: auditedToken(revoked) },
        );
      },
    }),
  ];
}
