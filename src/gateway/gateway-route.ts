/**
 * Which gateway a request target names, read the way express 5 routed `/<path>/:key` before the
 * gateway moved to bare node:http, so that no device sees a difference: paths case-insensitive, one
 * optional trailing slash, the key percent-decoded, the query parsed by node:querystring.
 */
import { parse as parseQuery } from 'node:querystring';
import { GATEWAY_KINDS, GATEWAY_PATHS, type GatewayKind } from '../queue/jobs.ts';

export interface GatewayRoute {
  kind: GatewayKind;
  /** The API key: the last path segment, percent-decoded. */
  key: string;
  /** The query string without its `?`; undefined when the target has none. */
  query: string | undefined;
}

const KIND_BY_PATH = new Map<string, GatewayKind>(GATEWAY_KINDS.map((kind) => [GATEWAY_PATHS[kind], kind]));

// The paths are lowercase letters and '/', nothing to escape. `[^/]+` and `/?$` are what
// path-to-regexp 8 made of '/<path>/:key' with express's defaults (not strict, not case-sensitive).
const ROUTE = new RegExp(`^/(${GATEWAY_KINDS.map((kind) => GATEWAY_PATHS[kind]).join('|')})/([^/]+)/?$`, 'i');

// An absolute-form target (`POST http://host/raw/<KEY>`, as sent through some proxies) is routed on its path.
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** The gateway a request target names, or undefined for 404 (unknown path, key not valid percent-encoding). */
export function matchGatewayRoute(target: string): GatewayRoute | undefined {
  const { pathname, query } = splitTarget(target.startsWith('/') ? target : target.replace(ORIGIN, ''));
  const match = ROUTE.exec(pathname);
  if (match === null) return undefined;
  const [, path = '', segment = ''] = match;
  const kind = KIND_BY_PATH.get(path.toLowerCase());
  const key = decodeSegment(segment);
  return kind === undefined || key === undefined ? undefined : { kind, key, query };
}

/**
 * `?deviceName=` as express's default ("simple") query parser gave it: decoded, `+` as a space; a
 * parameter given twice is an array, not a name, and is ignored.
 */
export function deviceNameFromQuery(query: string | undefined): string | undefined {
  if (query === undefined) return undefined;
  const name = parseQuery(query).deviceName;
  return typeof name === 'string' ? name : undefined;
}

/** Path and query of a target; a fragment ends both (as url.parse, which express used then, read it). */
function splitTarget(target: string): { pathname: string; query: string | undefined } {
  const hash = target.indexOf('#');
  const beforeHash = hash === -1 ? target : target.slice(0, hash);
  const mark = beforeHash.indexOf('?');
  return mark === -1
    ? { pathname: beforeHash, query: undefined }
    : { pathname: beforeHash.slice(0, mark), query: beforeHash.slice(mark + 1) };
}

/** decodeURIComponent, or undefined where it throws: a key that is not valid percent-encoding is no path (404). */
function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
