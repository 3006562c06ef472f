import { describe, expect, it } from 'vitest';
import { maskedUrl, redactUrlSecrets } from '../../../src/alerting/url-secrets.ts';

describe('URL secrets', () => {
  it.each([
    ['https://hooks.example/in', 'https://hooks.example/in'],
    ['https://hooks.example:8443/a/b?x', 'https://hooks.example:8443/a/b?********'],
    [
      'https://u:p%40ss@hooks.example/in?token=abc&t=',
      'https://********@hooks.example/in?token=********&t=********',
    ],
    ['https://user@hooks.example/in#frag', 'https://********@hooks.example/in'],
    ['not a url', '********'],
  ])('shows %s as %s', (url, shown) => {
    expect(maskedUrl(url)).toBe(shown);
  });

  it('masks what a receiver echoes of the URL, as written or decoded, and leaves the rest', () => {
    const url = 'https://hookbot:pa%24%24word@hooks.example/in?token=s3cret%2Bvalue&n=1';
    expect(redactUrlSecrets('404: no /in?token=s3cret%2Bvalue&n=1 here', url)).toBe(
      '404: no /in?token=********&n=******** here',
    );
    expect(redactUrlSecrets('bad token s3cret+value for hookbot, HTTP 401', url)).toBe(
      'bad token ******** for ********, HTTP 401',
    );
    expect(redactUrlSecrets('user hookbot:pa$$word refused', url)).toBe('user ******** refused');
    expect(
      redactUrlSecrets(
        'Slack says no to /services/T1/B2/xyzzy',
        'https://h.example/services/T1/B2/xyzzy',
        true,
      ),
    ).toBe('Slack says no to /********');
  });
});
