import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/app-error.ts';
import {
  ENV_NAME_PATTERN,
  NAME_PATTERN,
  assertEnvName,
  assertName,
  deviceLabelsProblem,
  displayNameProblem,
  nameProblem,
  normalDevEui,
  normalDeviceLabels,
} from '../../../src/domain/identifiers.ts';

/** What every refusal of a name throws. */
const INVALID_INPUT = expect.objectContaining({ name: 'AppError', code: 'INVALID_INPUT' }) as Error;

describe('environment names', () => {
  it.each(['demo', 'a', '0', 'acme-prod', 'x'.repeat(63), '9-lives'])('accepts %j', (name) => {
    expect(ENV_NAME_PATTERN.test(name)).toBe(true);
    expect(() => assertEnvName(name)).not.toThrow();
  });

  it.each(['', 'Demo', '-demo', 'de mo', 'de_mo', 'x'.repeat(64), 'démo', 'a:b', 'a\n'])(
    'refuses %j',
    (name) => {
      expect(() => assertEnvName(name)).toThrow(INVALID_INPUT);
    },
  );

  it('refuses a value that is not text', () => {
    expect(() => assertEnvName(42)).toThrow(INVALID_INPUT);
  });
});

describe('device, definition and data point names', () => {
  it.each([
    'device_1_hallway',
    'Open-plan R&D'.replace('&', 'and'),
    'ComfortSensors',
    'a',
    'v1.2:temp',
    'Battery millivolts',
    'two  spaces',
    'x'.repeat(128),
    '-leading-dash',
  ])('accepts %j', (name) => {
    expect(NAME_PATTERN.test(name)).toBe(true);
    expect(() => assertName('device', name)).not.toThrow();
  });

  it.each([
    '',
    ' lead',
    'trail ',
    ' ',
    'x'.repeat(129),
    'a/b',
    'a\tb',
    'a\nb',
    'R&D',
    'naïve',
    'a,b',
    'a"b',
    'a{b}',
  ])('refuses %j', (name) => {
    expect(() => assertName('data point', name)).toThrow(INVALID_INPUT);
  });

  it('names the kind and what is allowed', () => {
    expect(nameProblem('definition', 'bad/name')).toBe(
      `invalid definition name "bad/name": use 1-128 letters, digits, '_', '-', '.', ':' and inner spaces`,
    );
    expect(nameProblem('device', 'ok')).toBeUndefined();
  });

  it('throws INVALID_INPUT', () => {
    try {
      assertName('device', '');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('INVALID_INPUT');
    }
  });
});

describe('usernames', () => {
  it.each(['alice', 'ops@example.com', 'a.b+c_d-e'])('accepts %j', (name) => {
    expect(() => assertName('username', name)).not.toThrow();
  });
  it.each(['', 'with space', 'x'.repeat(129)])('refuses %j', (name) => {
    expect(() => assertName('username', name)).toThrow(INVALID_INPUT);
  });
});

describe('display names', () => {
  it.each(['Hallway', 'Open-plan R&D Office', 'Voordeur «Zuid» — 2e 🚪', '<b>', 'x'.repeat(200)])(
    'accepts %j',
    (name) => {
      expect(displayNameProblem(name)).toBeUndefined();
    },
  );
  it.each([
    '',
    'x'.repeat(201),
    'a\r\nBcc: b@c',
    'a\nb',
    'a\tb',
    'a\u0000',
    'a\u007f',
    'a\u0085',
    'a\u2028',
    'a\u202eb',
    'a\u2066',
    42,
  ])('refuses %j', (name) => {
    expect(displayNameProblem(name)).toMatch(/^invalid display name/);
  });
});

describe('DevEUIs', () => {
  it.each([
    ['70b3d57ed0001234', '70b3d57ed0001234'],
    ['70B3D57ED0001234', '70b3d57ed0001234'],
    ['0000000000000000', '0000000000000000'],
    ['aBcDeF0123456789', 'abcdef0123456789'],
  ])('takes %j as %j', (given, stored) => {
    expect(normalDevEui(given)).toBe(stored);
    expect(deviceLabelsProblem({ devEui: given })).toBeUndefined();
    expect(normalDeviceLabels({ devEui: given, site: 'Dock' })).toEqual({ devEui: stored, site: 'Dock' });
  });

  it.each([
    '70b3d57ed000123',
    '70b3d57ed00012345',
    '70b3d57ed000123g',
    '70b3-d57e-d000-1234',
    ' 70b3d57ed0001234',
    '',
  ])('refuses %j', (given) => {
    expect(normalDevEui(given)).toBeNull();
    expect(deviceLabelsProblem({ devEui: given })).toMatch(/devEui/);
  });

  it('leaves labels of other keys alone, a deveui in another case too', () => {
    expect(deviceLabelsProblem({ deveui: 'anything', DevEUI: 'x' })).toBeUndefined();
    expect(normalDeviceLabels({ DevEUI: 'ABC' })).toEqual({ DevEUI: 'ABC' });
  });
});
