/**
 * The secrets a channel URL can carry — a user and password, query values (`?token=…`), and for
 * Slack the whole path — kept out of what people see: listings show the URL masked, and an answer
 * that echoes the URL back (a 404 page naming the path it was asked for) is masked before it is
 * printed or logged.
 */

/** What stands for a secret wherever one is shown. */
export const MASK = '********';

/**
 * Pieces shorter than this are masked only as part of a longer one: a query value `1` is no secret
 * worth mangling every `1` of an answer for.
 */
const SHORTEST_MASKED_PIECE = 4;

function parse(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** `?a=1&b` → `?a=********&b=********`: names kept, every value masked. */
function maskedQuery(search: string): string {
  if (search === '') return '';
  const parts = search
    .slice(1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      return eq < 0 ? MASK : `${part.slice(0, eq)}=${MASK}`;
    });
  return `?${parts.join('&')}`;
}

/**
 * The URL as it may be shown: user and password as one mask, every query value masked, no
 * fragment (`https://********@hooks.example/in?token=********`).
 */
export function maskedUrl(text: string): string {
  const url = parse(text);
  if (!url) return MASK;
  const userinfo = url.username !== '' || url.password !== '' ? `${MASK}@` : '';
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${maskedQuery(url.search)}`;
}

/** The secret pieces of a URL, as written and decoded, longest first. */
function secretPieces(url: URL, withPath: boolean): [string, string][] {
  const pieces: [string, string][] = [];
  const add = (raw: string, shown: string) => {
    for (const text of new Set([raw, safeDecode(raw)]))
      if (text.length >= SHORTEST_MASKED_PIECE) pieces.push([text, shown]);
  };
  add(url.search.slice(1), maskedQuery(url.search).slice(1));
  if (url.username !== '' || url.password !== '') add(`${url.username}:${url.password}`, MASK);
  for (const piece of [url.username, url.password]) add(piece, MASK);
  for (const part of url.search.slice(1).split('&')) add(part.slice(part.indexOf('=') + 1), MASK);
  if (withPath && url.pathname.length > 1) add(url.pathname, `/${MASK}`);
  return pieces.sort((a, b) => b[0].length - a[0].length);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * `text` with every secret piece of `url` masked where it appears. `withPath`: the path is a
 * secret too (a Slack incoming-webhook URL).
 */
export function redactUrlSecrets(text: string, url: string, withPath = false): string {
  const parsed = parse(url);
  if (!parsed || text === '') return text;
  let out = text;
  for (const [piece, shown] of secretPieces(parsed, withPath)) out = out.split(piece).join(shown);
  return out;
}
