/**
 * The text of a queue entry's items (field `p` of ingest-queue.ts): each item as its fixed fields
 * separated by tabs, then its free-text fields length-prefixed, items back to back:
 *
 *   id ⇥ env ⇥ gateway ⇥ via ⇥ receivedMs ⇥ bodyIsHex(0|1) ⇥ L(deviceName) L(nameInBody) L(client) L(body)
 *
 * followed, for a network server's message (`tts`, `chirpstack`: gateways no earlier version
 * queued), by L(event) L(keyId);
 * where L(s) is `<s.length>:<s>` (length in UTF-16 units) and `-` for an absent field. The fixed
 * fields never hold a tab (ingest ids are base64url, environment names are validated, the rest
 * are enums and digits); the free text may hold anything. Rather than JSON: a little over half the
 * size, and read (once per payload, by the worker) in under half the time of JSON.parse
 * (docs/benchmarks-journal.md). A malformed text throws: its step fails, as any step that cannot
 * read its entries.
 */
import { isNetworkServer, type IngestGateway, type IngestItem } from '../domain/ingest-item.ts';

export function packItems(items: readonly IngestItem[]): string {
  let text = '';
  for (const it of items) {
    text +=
      `${it.id}\t${it.env}\t${it.gateway}\t${it.via}\t${it.receivedMs}\t${it.bodyIsHex ? 1 : 0}\t` +
      `${field(it.deviceName)}${field(it.nameInBody)}${field(it.client)}${field(it.body)}`;
    if (isNetworkServer(it.gateway)) text += `${field(it.event)}${field(it.keyId)}`;
  }
  return text;
}

const field = (s: string | undefined): string => (s === undefined ? '-' : `${s.length}:${s}`);

export function unpackItems(text: string): IngestItem[] {
  const items: IngestItem[] = [];
  let pos = 0;
  const fixed = (): string => {
    const end = text.indexOf('\t', pos);
    if (end < 0) throw malformed(pos);
    const value = text.slice(pos, end);
    pos = end + 1;
    return value;
  };
  const free = (): string | undefined => {
    if (text.charCodeAt(pos) === 45 /* - */) {
      pos += 1;
      return undefined;
    }
    const colon = text.indexOf(':', pos);
    const length = Number(text.slice(pos, colon));
    if (colon < 0 || !Number.isSafeInteger(length) || colon + 1 + length > text.length) throw malformed(pos);
    pos = colon + 1 + length;
    return text.slice(colon + 1, pos);
  };
  while (pos < text.length) {
    const id = fixed();
    const env = fixed();
    const gateway = fixed() as IngestGateway;
    const via = fixed() === 'http' ? 'http' : 'mqtt';
    const receivedMs = Number(fixed());
    const bodyIsHex = fixed() === '1';
    const deviceName = free();
    const nameInBody = free();
    const client = free() ?? '';
    const body = free() ?? '';
    const item: IngestItem = { id, env, gateway, via, receivedMs, body, bodyIsHex, client };
    if (deviceName !== undefined) item.deviceName = deviceName;
    if (nameInBody !== undefined) item.nameInBody = nameInBody;
    if (isNetworkServer(gateway)) {
      const event = free();
      const keyId = free();
      if (event !== undefined) item.event = event;
      if (keyId !== undefined) item.keyId = keyId;
    }
    items.push(item);
  }
  return items;
}

const malformed = (at: number) => new Error(`malformed queue entry at character ${at}`);
