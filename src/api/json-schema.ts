/**
 * Small builders of JSON Schema for the OpenAPI document: what the read API's answers and the
 * management operations' answers are described with.
 */
export type JsonSchema = Record<string, unknown>;

/** An ISO 8601 UTC timestamp, or null. */
export const ts = {
  type: ['string', 'null'],
  format: 'date-time',
  description: 'ISO 8601 UTC with milliseconds.',
};
export const str = { type: 'string' };
export const int = { type: 'integer' };
export const bool = { type: 'boolean' };
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const arrayOf = (items: unknown) => ({ type: 'array', items });
/** An object with every property required. */
export const objectOf = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
export const json = (schema: unknown) => ({ 'application/json': { schema } });
export const envelope = (data: unknown) => ({
  type: 'object',
  required: ['status', 'data'],
  properties: { status: { const: 'success' }, data },
});
