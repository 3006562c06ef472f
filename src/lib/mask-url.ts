/**
 * A URL as it may be printed (configuration errors, logs): its user, password and query values
 * replaced by `***`, its fragment dropped; undefined when the text is not a URL (and may still hold
 * a password, so it is not printed at all).
 */
export function maskUrl(text: string): string | undefined {
  if (!URL.canParse(text)) return undefined;
  const url = new URL(text);
  if (url.username !== '' || url.password !== '') {
    url.username = '***';
    url.password = '';
  }
  for (const name of new Set(url.searchParams.keys())) url.searchParams.set(name, '***');
  url.hash = '';
  return url.toString();
}
