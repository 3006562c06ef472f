import { describe, expect, it } from 'vitest';
import { maskUrl } from '../../../src/lib/mask-url.ts';

describe('maskUrl', () => {
  it.each([
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['redis://:s3cret@redis:6379/0', 'redis://***@redis:6379/0'],
    ['rediss://vigil:s3cret@redis.example.com:6380', 'rediss://***@redis.example.com:6380'],
    ['smtps://user:pa%40ss@mail.example.com', 'smtps://***@mail.example.com'],
    ['http://influx:8086/?u=admin&p=s3cret#x', 'http://influx:8086/?u=***&p=***'],
  ])('shows %s as %s', (url, shown) => {
    expect(maskUrl(url)).toBe(shown);
  });

  it('shows nothing of a text that is not a URL, which may still hold a password', () => {
    expect(maskUrl('redis://:s3cret@redis host:6379')).toBeUndefined();
  });
});
