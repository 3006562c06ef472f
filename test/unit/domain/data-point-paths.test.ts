import { describe, expect, it } from 'vitest';
import { parseSourcePath, valueAtPath } from '../../../src/domain/data-point-paths.ts';

describe('data point source paths', () => {
  it('reads keys, [n] and .n steps', () => {
    expect(parseSourcePath('position.latitude')).toEqual(['position', 'latitude']);
    expect(parseSourcePath('channels[0].value')).toEqual(['channels', '0', 'value']);
    expect(parseSourcePath('channels.1')).toEqual(['channels', '1']);
    expect(parseSourcePath('a[2][3]')).toEqual(['a', '2', '3']);
    expect(parseSourcePath('Battery level')).toEqual(['Battery level']);
  });

  it('refuses empty keys and stray brackets', () => {
    for (const bad of ['', '.a', 'a.', 'a..b', '[0]', 'a[x]', 'a]', 'a[0']) {
      expect(parseSourcePath(bad), bad).toHaveProperty('problem');
    }
  });

  it('finds values in nested objects and arrays, and nothing where a step finds nothing', () => {
    const result = JSON.parse(
      '{"position":{"latitude":52.370216,"longitude":4.895168},"channels":[{"value":1.5},{"value":null}],"__proto__":{"x":1}}',
    ) as unknown;
    const at = (path: string) => valueAtPath(result, parseSourcePath(path) as string[]);
    expect(at('position.latitude')).toBe(52.370216);
    expect(at('channels[0].value')).toBe(1.5);
    expect(at('channels.1.value')).toBeNull();
    expect(at('channels[5].value')).toBeUndefined();
    expect(at('position.latitude.deeper')).toBeUndefined();
    expect(at('channels.length')).toBeUndefined();
    expect(at('position.constructor')).toBeUndefined();
    expect(at('__proto__.x')).toBe(1);
  });
});
