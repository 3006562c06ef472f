import { describe, expect, it } from 'vitest';
import { deviceNameFromQuery, matchGatewayRoute } from '../../../src/gateway/gateway-route.ts';

describe('gateway route of a request target (as express 5 routed /<path>/:key)', () => {
  it.each([
    ['/gateway/submit/vk_k', { kind: 'submit', key: 'vk_k', query: undefined }],
    ['/raw/vk_k?deviceName=d', { kind: 'raw', key: 'vk_k', query: 'deviceName=d' }],
    ['/rawpreparseronly/vk_k', { kind: 'rawpreparseronly', key: 'vk_k', query: undefined }],
    ['/GATEWAY/Submit/vk_k', { kind: 'submit', key: 'vk_k', query: undefined }],
    ['/raw/vk_k/', { kind: 'raw', key: 'vk_k', query: undefined }],
    ['/raw/vk%5Fk', { kind: 'raw', key: 'vk_k', query: undefined }],
    ['/raw/%2F..%2Fetc', { kind: 'raw', key: '/../etc', query: undefined }],
    ['/raw/..', { kind: 'raw', key: '..', query: undefined }],
    ['/raw/vk_k?a=1?deviceName=d', { kind: 'raw', key: 'vk_k', query: 'a=1?deviceName=d' }],
    ['/raw/vk_k?deviceName=d#frag', { kind: 'raw', key: 'vk_k', query: 'deviceName=d' }],
    ['/raw/vk_k#frag?deviceName=d', { kind: 'raw', key: 'vk_k', query: undefined }],
    ['http://host:8081/raw/vk_k?deviceName=d', { kind: 'raw', key: 'vk_k', query: 'deviceName=d' }],
    ['/raw/%E0%A4%A', undefined],
    ['/raw/', undefined],
    ['/raw/vk_k//', undefined],
    ['/raw/vk_k/extra', undefined],
    ['/gateway/submit', undefined],
    ['/gateway/submit/../../raw/vk_k', undefined],
    ['//raw/vk_k', undefined],
    ['/r%61w/vk_k', undefined],
    ['/nope/vk_k', undefined],
    ['*', undefined],
    ['/', undefined],
  ])('%s → %j', (target, expected) => {
    expect(matchGatewayRoute(target)).toEqual(expected);
  });
});

describe('?deviceName= (node:querystring, as express 5 parsed it)', () => {
  it.each([
    [undefined, undefined],
    ['deviceName=dev%201', 'dev 1'],
    ['deviceName=dev+1', 'dev 1'],
    ['deviceName=%ZZ', '%ZZ'],
    ['a=1&deviceName=d', 'd'],
    ['deviceName=', ''],
    ['deviceName=a&deviceName=b', undefined],
    ['deviceName[]=a', undefined],
    ['devicename=d', undefined],
  ])('%s → %s', (query, expected) => {
    expect(deviceNameFromQuery(query)).toBe(expected);
  });
});
