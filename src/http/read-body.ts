/**
 * The request body as bytes, whatever its Content-Type, read the way express.raw (body-parser 2)
 * read it before the gateway moved to bare node:http — same encodings, same limit, same outcome
 * for every body — except that a refusal no longer waits for the rest of the body (discardRest).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { finished, type Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';

/** How long a refused client that keeps sending may still read its answer before its connection is dropped. */
const LINGER_MS = 2000;

/** Why a body could not be read; INVALID_JSON covers an abort, a corrupt stream and an unsupported encoding. */
export type BodyFailure = 'PAYLOAD_TOO_LARGE' | 'INVALID_JSON';

/**
 * Reads the body, at most `limitBytes` after decoding Content-Encoding (identity, gzip, deflate,
 * br, zstd). Content-Length is checked before reading when the body is not encoded (an encoded
 * body's length says nothing of its decoded size). `res` is the answer a refusal goes out on: a
 * connection is never closed before its answer is out (see discardRest).
 */
export async function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Promise<Buffer | BodyFailure> {
  // A request that declares no body has none (body-parser skipped it, encoding and all).
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)
    return Buffer.alloc(0);
  // The client went away while the key was being checked: what it sent is gone with it.
  if (req.destroyed) return 'INVALID_JSON';
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding === 'identity') {
    if (Number(req.headers['content-length']) > limitBytes) {
      discardRest(req, res, limitBytes);
      return 'PAYLOAD_TOO_LARGE';
    }
    return collect(req, undefined, res, limitBytes);
  }
  const decoder = createDecoder(encoding);
  // Answered without reading, as before; node:http drops the unread body after the answer.
  if (decoder === undefined) return 'INVALID_JSON';
  req.pipe(decoder);
  return collect(req, decoder, res, limitBytes);
}

function createDecoder(encoding: string): Transform | undefined {
  switch (encoding) {
    case 'deflate':
      return zlib.createInflate();
    case 'gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return zlib.createZstdDecompress();
    default:
      return undefined;
  }
}

/** Collects the request, or its decoder's output, up to the limit. */
function collect(
  req: IncomingMessage,
  decoder: Transform | undefined,
  res: ServerResponse,
  limitBytes: number,
): Promise<Buffer | BodyFailure> {
  const source: Readable = decoder ?? req;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) settle('PAYLOAD_TOO_LARGE');
      else chunks.push(chunk);
    };
    const onEnd = () =>
      settle(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, received));
    const onFailure = () => settle('INVALID_JSON');
    // The request closing before all of it arrived is an abort, whether it is read directly or decoded.
    const onClose = () => {
      if (!req.complete) settle('INVALID_JSON');
    };
    const settle = (result: Buffer | BodyFailure) => {
      source.off('data', onData).off('end', onEnd).off('error', onFailure);
      req.off('error', onFailure).off('close', onClose);
      if (decoder !== undefined) stopDecoding(req, decoder);
      // Synchronously, so that no chunk of the rest is emitted with nobody listening.
      if (!req.readableEnded) discardRest(req, res, limitBytes);
      resolve(result);
    };
    source.on('data', onData).on('end', onEnd).on('error', onFailure);
    if (decoder !== undefined) req.on('error', onFailure);
    req.on('close', onClose);
  });
}

function stopDecoding(req: IncomingMessage, decoder: Transform): void {
  req.unpipe(decoder);
  // A decoder destroyed mid-stream may still report the truncation; nobody needs to hear it.
  decoder.on('error', () => {});
  decoder.destroy();
}

/**
 * Drops what remains of a body that will not be used, up to `budgetBytes`: a device that overshoots
 * the limit a little keeps its connection. Beyond the budget the gateway stops reading and, once
 * the answer is out, half-closes, so the client reads its answer instead of a reset; a client that
 * neither reads nor stops is cut off after LINGER_MS. (body-parser read the whole rest before
 * answering at all.)
 */
function discardRest(req: IncomingMessage, res: ServerResponse, budgetBytes: number): void {
  let discarded = 0;
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded <= budgetBytes || req.complete) return;
    req.off('data', onData).pause();
    finished(res, () => {
      req.socket.end();
      setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
    });
  };
  req.on('data', onData).resume();
}
