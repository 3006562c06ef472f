/**
 * aedes (through mqtt-packet) has no packet size limit: a client announcing a 256 MB PUBLISH gets
 * it buffered in full. The guard reads the fixed header of every packet as bytes pass and tells the
 * broker to drop the connection as soon as a packet announces more than the limit, before its body
 * is buffered.
 */
import type { Socket } from 'node:net';

/** Room for the topic (≤ 65,535 bytes), packet id and MQTT 5 properties beside the payload. */
export const PACKET_OVERHEAD_BYTES = 65_536 + 1024;

/**
 * A scanner of an MQTT byte stream: feed it every chunk in order; it returns false once a packet
 * announces a remaining length above `maxRemainingLength` or a malformed length.
 */
export function createPacketSizeScanner(maxRemainingLength: number): (chunk: Buffer) => boolean {
  let skip = 0;
  let inLength = false;
  let length = 0;
  let multiplier = 1;
  let lengthBytes = 0;
  return (chunk) => {
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        skip -= n;
        i += n;
      } else if (!inLength) {
        // Fixed header, first byte: packet type and flags.
        inLength = true;
        length = 0;
        multiplier = 1;
        lengthBytes = 0;
        i += 1;
      } else {
        const byte = chunk[i] ?? 0;
        i += 1;
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        lengthBytes += 1;
        if ((byte & 0x80) === 0) {
          if (length > maxRemainingLength) return false;
          inLength = false;
          skip = length;
        } else if (lengthBytes >= 4) return false;
      }
    }
    return true;
  };
}

/**
 * Makes `socket.read` (what aedes calls for each batch) scan what it returns, and destroys the
 * socket instead of returning a chunk that belongs to an oversize packet.
 */
export function guardPacketSize(socket: Socket, maxRemainingLength: number): void {
  const scan = createPacketSizeScanner(maxRemainingLength);
  const read = socket.read.bind(socket);
  socket.read = (size?: number): unknown => {
    const chunk: unknown = read(size);
    if (Buffer.isBuffer(chunk) && !scan(chunk)) {
      socket.destroy();
      return null;
    }
    return chunk;
  };
}
