import { describe, expect, it } from 'vitest';
import {
  availabilityLostMessage,
  availabilityRestoredMessage,
  minutesWithoutContact,
  returnedToSuccessMessage,
  sensorEventMessage,
} from '../../../src/domain/event-messages.ts';

describe('event messages', () => {
  it('describes a status change with sensor, rule, status and current value', () => {
    expect(sensorEventMessage('Temperature', 'Above 25 °C', 'WARNING', '25,3 °C')).toBe(
      'Temperature - Above 25 °C - WARNING - 25,3 °C',
    );
    expect(sensorEventMessage('Temperature', 'Overheating', 'CRITICAL', '30.2 °C')).toBe(
      'Temperature - Overheating - CRITICAL - 30.2 °C',
    );
  });

  it('describes a return to SUCCESS', () => {
    expect(returnedToSuccessMessage('Humidity', '45.2 %')).toBe(
      'Humidity - Returned to success status - SUCCESS - 45.2 %',
    );
  });

  it('describes lost contact in whole minutes with the last contact time', () => {
    expect(availabilityLostMessage(61, '2026-11-22T05:00:00.000Z', 'ERROR')).toBe(
      'availability - No contact for 61 minutes - ERROR - 2026-11-22T05:00:00.000Z',
    );
    expect(availabilityLostMessage(60.9, '2026-11-22T05:00:00.000Z', 'CRITICAL')).toBe(
      'availability - No contact for 60 minutes - CRITICAL - 2026-11-22T05:00:00.000Z',
    );
  });

  it('describes restored contact', () => {
    expect(availabilityRestoredMessage('2026-11-22T06:01:02.003Z')).toBe(
      'availability - Contact restored - SUCCESS - 2026-11-22T06:01:02.003Z',
    );
  });

  it.each([
    [0, 0, 0],
    [0, 59_999, 0],
    [0, 60_000, 1],
    [1_000, 3_601_000, 60],
    [5_000, 1_000, 0],
  ])('counts whole minutes from %d to %d as %d', (last, now, minutes) => {
    expect(minutesWithoutContact(last, now)).toBe(minutes);
  });
});
