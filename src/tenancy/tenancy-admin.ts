/**
 * The write side of the tenancy, used by the `vigil` command and provisioning. Every operation
 * validates all of its input before it writes, and writes in one MULTI/EXEC, so a refused command
 * leaves nothing half-written.
 */
import { createCredentialAdmin } from './admin-credentials.ts';
import { createDefinitionVersionAdmin } from './admin-definition-versions.ts';
import { createDeviceImporter } from './admin-device-import.ts';
import { createDefinitionAdmin } from './admin-definitions.ts';
import { createDeviceAdmin } from './admin-devices.ts';
import { createEnvironmentAdmin } from './admin-environments.ts';
import { createAdminContext, type AdminDeps } from './admin-support.ts';
import { createUserAdmin } from './admin-users.ts';

export type { AdminDeps } from './admin-support.ts';

export function createTenancyAdmin(deps: AdminDeps) {
  const ctx = createAdminContext(deps);
  return {
    ...createEnvironmentAdmin(ctx),
    ...createCredentialAdmin(ctx),
    ...createUserAdmin(ctx),
    ...createDefinitionAdmin(ctx),
    ...createDefinitionVersionAdmin(ctx),
    ...createDeviceAdmin(ctx),
    ...createDeviceImporter(ctx),
    requireEnv: ctx.requireEnv,
    catalogChanged: ctx.catalogChanged,
  };
}

export type TenancyAdmin = ReturnType<typeof createTenancyAdmin>;
