/**
 * HTML escaped by construction: `html` is a tagged template whose interpolations are escaped unless
 * they are Html already (made by `html` itself, or `raw` for text the console wrote). Everything a
 * device, a parser or a user controls goes in as an interpolation, so it can only ever be text.
 */

/** A piece of markup that is safe as it is. */
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
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

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '');
  });
  return new Html(out);
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
