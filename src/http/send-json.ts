import type { ServerResponse } from 'node:http';

/** A JSON answer with the headers express's res.json set (no ETag, no X-Powered-By). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

/** A text answer with its length. */
export function send(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
