import { describe, expect, it } from 'vitest';
import { parsePublishTopic, subscriptionKey } from '../../../src/mqtt/topics.ts';
import { bridgeFilters } from '../../../src/mqtt/bridge.ts';

describe('MQTT publish topics', () => {
  it.each([
    ['gateway/submit/vk_k', { kind: 'submit', key: 'vk_k' }],
    ['gateway/submit', { kind: 'submit' }],
    ['raw/vk_k', { kind: 'raw', key: 'vk_k' }],
    ['raw/vk_k/device 1', { kind: 'raw', key: 'vk_k', deviceName: 'device 1' }],
    ['rawpreparserfirst/vk_k/d', { kind: 'rawpreparserfirst', key: 'vk_k', deviceName: 'd' }],
    ['preparseronly/vk_k', { kind: 'preparseronly', key: 'vk_k' }],
    ['preparseronly/vk_k/d', undefined],
    ['gateway/submit/vk_k/d', undefined],
    ['raw/vk_k/d/extra', undefined],
    ['raw//d', undefined],
    ['gateway', undefined],
    ['other/vk_k', undefined],
    ['$SYS/x', undefined],
  ])('%s → %j', (topic, expected) => {
    expect(parsePublishTopic(topic)).toEqual(expected);
  });
});

describe('MQTT subscription filters', () => {
  it.each([
    ['raw/vk_k/+', 'vk_k'],
    ['gateway/submit/vk_k', 'vk_k'],
    ['raw/vk_k/#', 'vk_k'],
    ['raw/+/d', undefined],
    ['raw/#', undefined],
    ['#', undefined],
    ['+/vk_k', undefined],
    ['gateway/#', undefined],
  ])('%s is confined to key %s', (filter, key) => {
    expect(subscriptionKey(filter)).toBe(key);
  });

  it('bridges every topic form, as shared subscriptions when asked', () => {
    expect(bridgeFilters('g', false)).toContain('raw/+/+');
    expect(bridgeFilters('g', true)).toEqual(
      expect.arrayContaining(['$share/g/gateway/submit/+', '$share/g/raw/+/+']),
    );
    expect(bridgeFilters('g', true)).toHaveLength(9);
  });
});
