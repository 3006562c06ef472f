import type { Request, Response } from 'express';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A 200 JSON answer with exactly the headers and body of express's `res.json` (Content-Type with
 * its charset, Content-Length, no body for HEAD) without what `res.json` and `res.send` redo on
 * every call: look up four app settings, parse and reformat the Content-Type, read back headers,
 * copy a longer body into a Buffer. A conditional GET that express would answer 304, or a status
 * other than 200, goes through `res.json` itself.
 */
export function sendJson(req: Request, res: Response, body: unknown): void {
  if (res.statusCode !== 200 || req.fresh) {
    res.json(body);
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
