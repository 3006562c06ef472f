import { describe, expect, it } from 'vitest';
import { createCrashGate } from '../../../src/worker/crash-gate.ts';
import { flush, watch } from './step-loop-fakes.ts';

describe('crash gate', () => {
  it('lets ordinary steps share it', async () => {
    const gate = createCrashGate();
    const first = watch(gate.shared());
    const second = watch(gate.shared());
    await flush();
    expect([first.settled, second.settled]).toEqual([true, true]);
  });

  it('runs a suspect step only once every ordinary step in flight has left', async () => {
    const gate = createCrashGate();
    const leaveA = await gate.shared();
    const leaveB = await gate.shared();
    const alone = watch(gate.alone());
    leaveA();
    await flush();
    expect(alone.settled).toBe(false);
    leaveB();
    await flush();
    expect(alone.settled).toBe(true);
  });

  it('holds new ordinary steps back while a suspect step waits or runs', async () => {
    const gate = createCrashGate();
    const leaveShared = await gate.shared();
    const alone = gate.alone();
    const later = watch(gate.shared());
    leaveShared();
    const leaveAlone = await alone;
    await flush();
    expect(later.settled).toBe(false);
    leaveAlone();
    await flush();
    expect(later.settled).toBe(true);
  });

  it('runs suspect steps one at a time', async () => {
    const gate = createCrashGate();
    const leaveFirst = await gate.alone();
    const second = watch(gate.alone());
    await flush();
    expect(second.settled).toBe(false);
    leaveFirst();
    await flush();
    expect(second.settled).toBe(true);
  });

  it('counts a place left twice once', async () => {
    const gate = createCrashGate();
    const leaveA = await gate.shared();
    await gate.shared();
    const alone = watch(gate.alone());
    leaveA();
    leaveA();
    await flush();
    expect(alone.settled).toBe(false);
  });
});
