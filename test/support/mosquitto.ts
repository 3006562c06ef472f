/**
 * Debian's real Mosquitto 2.0 (which has MQTT 5 and shared subscriptions) as the external broker of
 * the bridge tests: on a free loopback port, anonymous, sessions in memory only.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, isListening } from '../../scripts/lib/local-services.ts';
import { eventually } from './eventually.ts';

export interface Mosquitto {
  url: string;
  /** Stops the broker (SIGTERM) and waits for it to exit; safe to call twice. */
  stop(): Promise<void>;
}

/** Starts mosquitto with its configuration file in `dir`. */
export async function startMosquitto(dir: string): Promise<Mosquitto> {
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', ''].join('\n'),
  );
  const child = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  await eventually(async () => child.exitCode !== null || (await isListening(port)), {
    timeoutMs: 10_000,
    message: 'mosquitto listening',
  });
  if (child.exitCode !== null) throw new Error('mosquitto did not start');
  let stopped: Promise<void> | undefined;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      })();
      return stopped;
    },
  };
}
