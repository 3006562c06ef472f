/**
 * A Vigil process (roles from VIGIL_ROLES, config from VIGIL_ variables) whose worker holds its
 * steps in flight on demand, for the pause fault of test/reliability/queue-pause.test.ts. After a
 * first SIGUSR2 every step waits between its state and its acknowledgement (its history is not
 * counted as written), and the first one to wait logs {@link HOLDING_STEP}; a second SIGUSR2 lets
 * them all go on and holds none after.
 */
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';

/** Logged (at info) when the first step waits. */
export const HOLDING_STEP = 'test: holding a step between its state and its acknowledgement';

// Run as the process's entry script; a test imports the module for its constant only.
if (import.meta.main) {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  let signals = 0;
  let gate: PromiseWithResolvers<void> | undefined;
  let announced = false;
  process.on('SIGUSR2', () => {
    signals += 1;
    if (signals === 1) gate = Promise.withResolvers<void>();
    else gate?.resolve();
  });
  await startVigil(config, log, {
    wrapProcess: (processItems) => async (items, step) => {
      const result = await processItems(items, step);
      if (signals !== 1 || !gate) return result;
      if (!announced) log.info(HOLDING_STEP);
      announced = true;
      const held = gate.promise;
      return { ...result, written: Promise.all([result.written, held]).then(([late]) => late ?? []) };
    },
  });
}
