/**
 * Keeps a crash attributable. A worker process that dies takes every step in flight with it, and
 * each of their entries counts one crash (fenced-step.ts). So a suspect — an entry that was in a
 * step that died — is processed with nothing else in flight in this process: if it kills the
 * process again, it alone is counted. Ordinary steps share the gate; a suspect's step waits for
 * them to finish (history and acknowledgement included), and new ordinary steps wait behind it.
 */
export interface CrashGate {
  /** Waits until no suspect step runs or waits, then holds a shared place; call the answer to leave. */
  shared(): Promise<() => void>;
  /** Waits until no other step is in flight in this process, then holds it alone; call the answer to leave. */
  alone(): Promise<() => void>;
}

export function createCrashGate(): CrashGate {
  let sharing = 0;
  let exclusive = false;
  const waitingAlone: (() => void)[] = [];
  const waitingShared: (() => void)[] = [];

  const wake = () => {
    if (exclusive) return;
    if (waitingAlone.length > 0) {
      if (sharing === 0) {
        exclusive = true;
        waitingAlone.shift()!();
      }
      return;
    }
    for (const go of waitingShared.splice(0)) {
      sharing += 1;
      go();
    }
  };
  const once = (leave: () => void) => {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      leave();
      wake();
    };
  };

  return {
    shared() {
      return new Promise((resolve) => {
        waitingShared.push(() => resolve(once(() => (sharing -= 1))));
        wake();
      });
    },
    alone() {
      return new Promise((resolve) => {
        waitingAlone.push(() => resolve(once(() => (exclusive = false))));
        wake();
      });
    },
  };
}
