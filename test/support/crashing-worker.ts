/**
 * A Vigil process (roles from VIGIL_ROLES, config from VIGIL_ variables) whose worker dies — SIGKILL,
 * no cleanup — on a step holding a payload whose body contains `"poison"`: the poison-message fault
 * of test/reliability/queue-poison.test.ts, a payload that makes its worker crash every time.
 */
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';

const config = loadConfig();
const log = createLogger(config.logLevel);
await startVigil(config, log, {
  wrapProcess: (processItems) => (items, step) => {
    if (items.some((item) => item.body.includes('"poison"'))) process.kill(process.pid, 'SIGKILL');
    return processItems(items, step);
  },
});
