import { describe, expect, it } from 'vitest';
import { parseChirpstackTopic, parsePublishTopic, subscriptionKey } from '../../../src/mqtt/topics.ts';
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

  it('bridges the events of each ChirpStack application given, and of no other', () => {
    const app = '17c82e96-be03-4f38-aef3-f83d48582d97';
    expect(bridgeFilters('g', true, [app])).toContain(`$share/g/application/${app}/device/+/event/+`);
    expect(bridgeFilters('g', false, [app])).toContain(`application/${app}/device/+/event/+`);
    expect(bridgeFilters('g', false, [app]).filter((f) => f.startsWith('application/'))).toHaveLength(1);
  });
});

describe('ChirpStack integration topics', () => {
  const app = '17c82e96-be03-4f38-aef3-f83d48582d97';
  it.each([
    [
      `application/${app}/device/0101010101010101/event/up`,
      { applicationId: app, devEui: '0101010101010101', event: 'up' },
    ],
    [
      `application/${app}/device/0101010101010101/event/status`,
      { applicationId: app, devEui: '0101010101010101', event: 'status' },
    ],
    [`application/${app}/device/0101010101010101/event/up/extra`, undefined],
    [`application/${app}/device/0101010101010101/command/down`, undefined],
    [`application/${app}/device/0101010101010101`, undefined],
    ['gateway/submit/vk_k', undefined],
  ])('%s → %j', (topic, expected) => {
    expect(parseChirpstackTopic(topic)).toEqual(expected);
  });
});
