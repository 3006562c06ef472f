/**
 * Entry point of the `vigil` command (bin/vigil runs it with --no-node-snapshot). It turns on
 * Node's compile cache before loading the command, so each run after the first skips most
 * TypeScript stripping and compiling (a third of the start-up CPU).
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { runCli } = await import('./run-cli.ts');
const code = await runCli(process.argv.slice(2));
// Exit once stdout is flushed (pipes are asynchronous on some systems), without waiting for an
// ioredis client that never connected: its reconnect timers would keep the process for seconds.
process.stdout.write('', () => process.exit(code));
