/**
 * The `vigil` administration command (docs/cli.md), started by ./main.ts. Exit codes: 0 done,
 * 1 refused or failed (one line on stderr: `vigil: <reason>`), 2 usage error.
 */
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load-config.ts';
import { isAppError } from '../errors/app-error.ts';
import { messageOf } from '../lib/message-of.ts';
import { addAlertingCommands } from './commands/alerting.ts';
import { addCredentialCommands } from './commands/credentials.ts';
import { addDefinitionCommands } from './commands/definitions.ts';
import { addDeviceCommands } from './commands/devices.ts';
import { addEnvCommands } from './commands/env.ts';
import { addIngestCommands } from './commands/ingest.ts';
import { addProvisionCommands } from './commands/provision.ts';
import { addQueueCommands } from './commands/queue.ts';
import { addProfileCommands } from './commands/profiles.ts';
import type { TargetOptions } from './profiles.ts';
import { createRuntime, type Runtime } from './runtime.ts';
import { escapeControls } from './terminal-text.ts';

export function buildProgram(rt: Runtime): Command {
  const program = new Command('vigil')
    .description(
      'Administration of Vigil: environments, credentials, definitions, devices, provisioning, alerting.',
    )
    // Before the command (`vigil --url … device list`): `channel create --url` is a webhook's.
    .enablePositionalOptions()
    .option('--url <url>', "a running Vigil's API address: manage it over HTTP (VIGIL_URL)")
    .option('--token <token>', 'the bearer token to use there (VIGIL_TOKEN)')
    .option('--profile <name>', 'a profile of the profile file (VIGIL_PROFILE; `vigil profile`)')
    .showSuggestionAfterError()
    .exitOverride()
    .hook('preAction', (root) => {
      // The program's own options, not a command's (`channel create --url` is a webhook's).
      const { url, token, profile } = root.opts<TargetOptions>();
      rt.configure({
        ...(url === undefined ? {} : { url }),
        ...(token === undefined ? {} : { token }),
        ...(profile === undefined ? {} : { profile }),
      });
    })
    .configureOutput({
      outputError: (str, write) => write(`vigil: ${str.replace(/^error: /, '').trimEnd()}\n`),
    });
  addEnvCommands(program, rt);
  addCredentialCommands(program, rt);
  addDefinitionCommands(program, rt);
  addDeviceCommands(program, rt);
  addProvisionCommands(program, rt);
  addIngestCommands(program, rt);
  addQueueCommands(program, rt);
  addAlertingCommands(program, rt);
  addProfileCommands(program, rt);
  return program;
}

/** Runs the command line; resolves with the exit code. */
export async function runCli(argv: string[], rt: Runtime = createRuntime()): Promise<number> {
  const program = buildProgram(rt);
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A command that printed its result but failed its purpose (definition test) sets exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    return reportFailure(err);
  } finally {
    await rt.close();
  }
}

function reportFailure(err: unknown): number {
  if (err instanceof CommanderError) {
    // Help and version are "errors" only to commander; its own message is already printed.
    if (err.exitCode === 0) return 0;
    if (err.code === 'commander.invalidArgument' && !err.message.startsWith('error:')) {
      process.stderr.write(`vigil: ${err.message}\n`);
    }
    return 2;
  }
  if (isAppError(err) || err instanceof ConfigError) {
    process.stderr.write(`vigil: ${oneLine(err.message)}\n`);
    return err instanceof ConfigError ? 2 : 1;
  }
  process.stderr.write(`vigil: unexpected failure: ${oneLine(messageOf(err))}\n`);
  return 1;
}

/** A message on one line, what is left of control characters shown escaped (names in it come from outside). */
const oneLine = (s: string) => escapeControls(s.replace(/\s*\n\s*/g, ' '));
