import type { Command } from 'commander';
import { alertingProvisioning } from '../../alerting/alerting-provisioning.ts';
import { cliActor, createAuditLog } from '../../audit/audit-log.ts';
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
    const { admin, store, config, redis, keys } = await rt.services();
    // System-level, not an operation of one environment: it records its channel and route changes
    // in each environment's audit log itself.
    const audit = createAuditLog({ redis, keys, retentionMs: config.auditRetentionDays * 86_400_000 });
    const alerting = alertingProvisioning(await rt.alerting(), { log: audit, actor: cliActor() });
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
