/**
 * HTTP POSTs to a checked address: the connection goes to the address the guard approved (its
 * `lookup` answers with it, so no second DNS lookup happens), TLS still verifies the URL's host
 * name, redirects are never followed (an answer is an answer), and the whole exchange has a time
 * limit. Connections are kept alive per host between deliveries.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { CheckedTarget } from '../address-guard.ts';

/** Most of an answer's body kept (for logs, `notify failed` and `channel test`). */
const BODY_KEPT_BYTES = 2048;

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The first 2 KiB of the body, as text. */
  body: string;
}

export interface PinnedPoster {
  post(
    target: CheckedTarget,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<HttpAnswer>;
  close(): void;
}

/** A `lookup` that answers every question with the checked address. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  const { address, family } = target.address;
  return (_host, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

export function createPinnedPoster(): PinnedPoster {
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  return {
    post(target, headers, body, timeoutMs) {
      const { url } = target;
      const secure = url.protocol === 'https:';
      const request = secure ? https.request : http.request;
      return new Promise<HttpAnswer>((resolve, reject) => {
        const req = request(
          url,
          {
            method: 'POST',
            agent: secure ? agents['https:'] : agents['http:'],
            lookup: pinnedLookup(target),
            headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            let kept = 0;
            res.on('data', (chunk: Buffer) => {
              if (kept < BODY_KEPT_BYTES) chunks.push(chunk.subarray(0, BODY_KEPT_BYTES - kept));
              kept += chunk.length;
            });
            res.on('end', () => {
              clearTimeout(timer);
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                body: Buffer.concat(chunks).toString('utf8'),
              });
            });
            res.on('error', fail);
            res.on('close', () => {
              if (!res.complete) fail(new Error('the answer was cut short'));
            });
          },
        );
        const timer = setTimeout(() => {
          const err = Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' });
          req.destroy(err);
        }, timeoutMs);
        function fail(err: Error) {
          clearTimeout(timer);
          reject(err);
        }
        req.on('error', fail);
        req.end(body);
      });
    },
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
