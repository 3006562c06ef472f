import type { Command } from 'commander';
import { alertingProvisioning } from '../../alerting/alerting-provisioning.ts';
import { applyProvisioning } from '../../tenancy/provisioning-apply.ts';
import { loadDefinitionFiles, loadParserFile } from '../../tenancy/definition-files.ts';
import { leaf, type Runtime } from '../runtime.ts';

export function addProvisionCommands(program: Command, rt: Runtime): void {
  const provision = program.command('provision').description('idempotent set-up from files');

  leaf(
    provision,
    'apply <dir>',
    'apply <dir>/environments.yaml (see docs/cli.md); a second run changes nothing',
  ).action(async (dir: string, opts: { json?: boolean }) => {
    const { admin, store } = await rt.services();
    const alerting = alertingProvisioning(await rt.alerting());
    const changes = await applyProvisioning(
      dir,
      { admin, store, loadDefinition: loadDefinitionFiles, loadPreparser: loadParserFile, alerting },
      process.env,
    );
    rt.print(opts.json, { dir, changes: changes.length, details: changes }, [
      ...changes.map((c) => `changed: ${c}`),
      `${changes.length} change${changes.length === 1 ? '' : 's'}`,
    ]);
  });
}
