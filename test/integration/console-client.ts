/**
 * A browser-less client of the web console over real HTTP: a cookie jar, GET and form POST without
 * following redirects, sign-in through the form, and a live page's event stream read as text.
 */
import { expect } from 'vitest';

export type ConsoleClient = ReturnType<typeof consoleClient>;

/** A client with its own cookie jar; `headers` go with every request. */
export function consoleClient(baseUrl: string, headers: Record<string, string> = {}) {
  const jar = new Map<string, string>();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '') jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), value);
    }
    return res;
  };
  return {
    jar,
    get: async (path: string) =>
      keep(
        await fetch(`${baseUrl}${path}`, { headers: { ...headers, cookie: cookie() }, redirect: 'manual' }),
      ),
    /** A form POST; fields as pairs repeat a name (rows of a form). */
    post: async (path: string, fields: Record<string, string> | [string, string][]) =>
      keep(
        await fetch(`${baseUrl}${path}`, {
          method: 'POST',
          body: new URLSearchParams(fields).toString(),
          headers: { ...headers, cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
          redirect: 'manual',
        }),
      ),
    /** Opens a live page's stream; `text()` is everything received so far. */
    async openLive(query: string) {
      const controller = new AbortController();
      const res = await fetch(`${baseUrl}/console/live?${query}`, {
        headers: { ...headers, cookie: cookie() },
        signal: controller.signal,
      });
      let received = '';
      const reading = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of res.body ?? [])
          received += decoder.decode(chunk as Uint8Array, { stream: true });
      })().catch(() => undefined);
      return {
        status: res.status,
        text: () => received,
        close: async () => {
          controller.abort();
          await reading;
        },
      };
    },
  };
}

/** The anti-forgery token of the first form in a page. */
export async function formToken(res: Response): Promise<string> {
  const token = /name="_csrf" value="([^"]+)"/.exec(await res.text())?.[1];
  if (!token) throw new Error('no anti-forgery token in the page');
  return token;
}

/** Signs in through the form; the client then holds the session cookie. */
export async function signIn(
  c: ConsoleClient,
  env: string,
  username: string,
  password: string,
): Promise<void> {
  const token = await formToken(await c.get('/console/sign-in'));
  const res = await c.post('/console/sign-in', { _csrf: token, env, username, password });
  expect([res.status, res.headers.get('location')]).toEqual([303, '/console/fleet']);
}

/** Whether the client's session opens the fleet page (a 303 to sign-in when it has ended). */
export async function fleetStatus(c: ConsoleClient): Promise<number> {
  const res = await c.get('/console/fleet');
  await res.arrayBuffer();
  return res.status;
}
