/**
 * HTML escaped by construction: `html` is a tagged template whose interpolations are escaped unless
 * they are Html already (made by `html` itself, or `raw` for text the console wrote). Everything a
 * device, a parser or a user controls goes in as an interpolation, so it can only ever be text.
 */

/**
 * A piece of markup that is safe as it is. It keeps the pieces it was made of (text and markup
 * within it), so that a large part encoded once — a fleet's thousand rows, shared by every page
 * that shows them — is not copied and encoded again into every answer that holds it.
 */
export class Html {
  private readonly parts: readonly (string | Html)[];
  private flat: string | undefined;
  private bytes: Buffer | undefined;
  constructor(parts: string | readonly (string | Html)[]) {
    this.parts = typeof parts === 'string' ? [parts] : parts;
  }
  /** The markup as text. */
  get text(): string {
    this.flat ??= this.parts.map((p) => (typeof p === 'string' ? p : p.text)).join('');
    return this.flat;
  }
  toString(): string {
    return this.text;
  }
  /** Encodes this markup once and keeps it: every answer holding it reuses the bytes. */
  encoded(): Buffer {
    this.bytes ??= this.toBuffer();
    return this.bytes;
  }
  /** The markup as UTF-8, with the bytes of parts encoded before (encoded()) reused as they are. */
  toBuffer(): Buffer {
    if (this.bytes) return this.bytes;
    const pieces = this.pieces();
    return pieces.length === 1 ? pieces[0]!.bytes : Buffer.concat(pieces.map((p) => p.bytes));
  }
  /**
   * The markup as UTF-8 in pieces, in order: the parts encoded before (encoded(), with `shared` set
   * to them) and the text between them.
   */
  pieces(): { bytes: Buffer; shared?: Html }[] {
    if (this.bytes) return [{ bytes: this.bytes, shared: this }];
    const out: { bytes: Buffer; shared?: Html }[] = [];
    let run = '';
    const walk = (h: Html) => {
      for (const p of h.parts) {
        if (typeof p === 'string') run += p;
        else if (p.bytes) {
          if (run) out.push({ bytes: Buffer.from(run) });
          out.push({ bytes: p.bytes, shared: p });
          run = '';
        } else walk(p);
      }
    };
    walk(this);
    if (run || out.length === 0) out.push({ bytes: Buffer.from(run) });
    return out;
  }
}

/** What may be interpolated: text (escaped), numbers, markup, lists of them; null/undefined/false render nothing. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text as HTML text or attribute value (quoted). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Appends what `value` renders to: escaped text, or the markup itself (kept as a part). */
function collect(value: HtmlValue, parts: (string | Html)[]): void {
  if (value === null || value === undefined || value === false) return;
  if (value instanceof Html) parts.push(value);
  else if (Array.isArray(value)) for (const v of value as readonly HtmlValue[]) collect(v, parts);
  else parts.push(escapeHtml(String(value)));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  const parts: (string | Html)[] = [strings[0] ?? ''];
  values.forEach((v, i) => {
    collect(v, parts);
    parts.push(strings[i + 1] ?? '');
  });
  return new Html(parts);
}

/** Markup the console itself wrote (never anything from outside). */
export const raw = (text: string): Html => new Html(text);

/**
 * JSON for a `<script type="application/json">` element: `<` escaped, so no text inside can close
 * the element.
 */
export function jsonInHtml(value: unknown): Html {
  return new Html(
    JSON.stringify(value)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029'),
  );
}
