/**
 * A page as gzip, with the large parts that many answers share (a fleet's rows, Html.encoded())
 * compressed once and reused. Deflate output ended with a sync flush is a run of whole blocks that
 * refer to nothing before it, so such runs — each shared part's, cached, and the page's own text
 * between them, compressed per answer — laid end to end and closed by a final empty block are one
 * valid deflate stream; the gzip frame around it carries the CRC-32 and length of the whole page.
 * Compressing a 1,000-device fleet page whole took more of the console's CPU than anything else
 * under load.
 */
import { constants, crc32, deflateRawSync } from 'node:zlib';
import type { Html } from './html.ts';

/** gzip header: magic, deflate, no flags, no time, no extra flags, OS unknown. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
/** A final, empty, fixed-Huffman block: closes the deflate stream. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);
const OPTIONS = { level: constants.Z_BEST_SPEED, finishFlush: constants.Z_SYNC_FLUSH };

const deflated = new WeakMap<Html, Buffer>();

function deflateShared(part: Html, bytes: Buffer): Buffer {
  let out = deflated.get(part);
  if (!out) {
    out = deflateRawSync(bytes, OPTIONS);
    deflated.set(part, out);
  }
  return out;
}

export function gzipHtml(page: Html): Buffer {
  const chunks: Buffer[] = [GZIP_HEADER];
  let crc = 0;
  let length = 0;
  for (const { bytes, shared } of page.pieces()) {
    chunks.push(shared ? deflateShared(shared, bytes) : deflateRawSync(bytes, OPTIONS));
    crc = crc32(bytes, crc);
    length += bytes.length;
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(length % 2 ** 32, 4);
  chunks.push(FINAL_BLOCK, trailer);
  return Buffer.concat(chunks);
}
