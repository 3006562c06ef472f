/**
 * `npm run demo`: the whole service on this machine with the demo of config/provisioning/demo. Starts Redis,
 * InfluxDB and Vigil (scripts/start.ts), applies config/provisioning/demo, prints the demo API key,
 * a fresh bearer token and curl commands, then simulates the three demo devices until Ctrl-C
 * (VIGIL_DEMO_SIMULATOR=0 skips the simulator). A local webhook receiver prints every notification
 * of the demo's route (WARNING and above), its signature verified. Runs with VIGIL_DEMO, the one
 * setting that accepts the demo's published credentials, so every listener is on a loopback address.
 *
 * Its settings are in a settings file of its own, var/demo/vigil.env (VIGIL_DEMO_CONFIG_FILE, for
 * tests), never the one `npm start` reads: the demo writes there what it sets (VIGIL_DEMO, its
 * public secrets key, the receiver's allow-list entry), and what the environment set instead, so
 * that `VIGIL_CONFIG_FILE=var/demo/vigil.env npx vigil …` reaches the demo with its key.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, settingsFilePath } from '../src/config/load-config.ts';
import { DEMO_SETTINGS_FILE, PUBLIC_DEMO } from '../src/config/public-demo.ts';
import type { Config } from '../src/config/schema.ts';
import { writeSettingsFile } from '../src/config/settings-file.ts';
import { createConnections } from '../src/redis/connections.ts';
import { adminDeps, createKeys } from '../src/keys.ts';
import { loadDefinitionFiles, loadParserFile } from '../src/tenancy/definition-files.ts';
import { applyProvisioning } from '../src/tenancy/provisioning-apply.ts';
import {
  expandVariables,
  parseProvisioningFile,
  PROVISIONING_FILE,
} from '../src/tenancy/provisioning-plan.ts';
import { createTenancyAdmin } from '../src/tenancy/tenancy-admin.ts';
import { createTenancyStore } from '../src/tenancy/tenancy-store.ts';
import { createAlertingAdmin } from '../src/alerting/alerting-admin.ts';
import { alertingProvisioning } from '../src/alerting/alerting-provisioning.ts';
import { cliActor, createAuditLog } from '../src/audit/audit-log.ts';
import { startDemoReceiver } from './lib/demo-receiver.ts';
import { startSimulator } from './lib/simulator.ts';
import { startLocal, stopOnSignals } from './start.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const demoDir = join(root, 'config', 'provisioning', 'demo');
const DEMO_ENV = 'demo';
const TOKEN_NAME = 'demo-session';
const say = (msg: string) => process.stderr.write(`[demo] ${msg}\n`);

const settingsFile = resolve(process.env.VIGIL_DEMO_CONFIG_FILE ?? join(root, DEMO_SETTINGS_FILE));
// The demo's secrets key is public: the file holding it must never be the one `npm start` reads.
if (settingsFile === settingsFilePath()) {
  process.stderr.write(
    `vigil: the demo's settings file ${settingsFile} is the one \`npm start\` reads: set VIGIL_DEMO_CONFIG_FILE to another path\n`,
  );
  process.exit(1);
}
/** The file as a command line run from here names it. */
const shownFile = (() => {
  const rel = relative(process.cwd(), settingsFile);
  return rel.startsWith('..') || isAbsolute(rel) ? settingsFile : rel;
})();
const HEADER = [
  'Settings of `npm run demo`, written at each of its starts (edits do not last): what the demo',
  'sets, and what its environment set instead. The environment wins over this file.',
  `The vigil command reaches the demo with them: VIGIL_CONFIG_FILE=${shownFile} npx vigil …`,
  "VIGIL_SECRETS_KEY here is the demo's public key (unless the environment gave one): never use it elsewhere.",
];

const demoPlan = parseProvisioningFile(readFileSync(join(demoDir, PROVISIONING_FILE), 'utf8'), process.env);
const demoChannel = demoPlan.environments.find((e) => e.name === DEMO_ENV)?.alerting.channels[0] as
  { secret?: string } | undefined;
const receiver = await startDemoReceiver(
  expandVariables(demoChannel?.secret ?? '', process.env),
  Number(process.env.DEMO_RECEIVER_PORT ?? 8099),
  (line) => process.stdout.write(`[notification] ${line}\n`),
);
// The provisioning's variables: the receiver's address is known only now.
const provisioningVars = { ...process.env, DEMO_WEBHOOK_URL: receiver.url };

// What the demo sets. The credentials are published, so only VIGIL_DEMO accepts them, and it
// listens on this machine only (a VIGIL_HOST of another address is refused). Channel secrets are
// stored encrypted: the demo brings a fixed, public key (set your own for anything else), and its
// receiver listens on this machine, whose port webhooks may reach only when allowed.
writeSettingsFile(settingsFile, HEADER, {
  VIGIL_DEMO: 'true',
  VIGIL_HOST: '127.0.0.1',
  VIGIL_SECRETS_KEY: PUBLIC_DEMO.secretsKey,
  VIGIL_NOTIFY_ALLOWED_HOSTS: new URL(receiver.url).host,
});
// The environment wins over the file: the file then says what the demo runs with, where the vigil
// command finds it (the Redis and key prefix it reaches, the key of its channel secrets).
let demoConfig: Config;
try {
  demoConfig = loadConfig(process.env, {}, { file: settingsFile });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`vigil: ${err.message}\n`);
  await receiver.stop();
  process.exit(1);
}
writeSettingsFile(settingsFile, HEADER, runningSettings(demoConfig));

/** The settings a `vigil` command needs to work on this demo, as the demo runs with them. */
function runningSettings(c: Config): Record<string, string> {
  return {
    VIGIL_DEMO: String(c.demo),
    VIGIL_HOST: c.host,
    VIGIL_REDIS_URL: c.redisUrl,
    VIGIL_KEY_PREFIX: c.keyPrefix,
    VIGIL_INFLUX_URL: c.influxUrl,
    VIGIL_INFLUX_DATABASE: c.influxDatabase,
    VIGIL_SECRETS_KEY: c.secretsKey ?? '',
    VIGIL_NOTIFY_ALLOWED_HOSTS: c.notifyAllowedHosts.join(','),
  };
}

const running = await startLocal({ file: settingsFile });
const config = running.config;
const connections = createConnections(config);
const redis = connections.command('vigil-demo');
await new Promise<void>((resolve) =>
  redis.status === 'ready' ? resolve() : redis.once('ready', () => resolve()),
);
const keys = createKeys(config.keyPrefix);
const admin = createTenancyAdmin(adminDeps(redis, keys));
const store = createTenancyStore({ redis, keys });
const alerting = createAlertingAdmin({ admin: adminDeps(redis, keys), keys, config, connections });

/** Applies the demo provisioning and issues a fresh session token; stops everything on failure. */
async function prepareDemo(): Promise<{ apiKey: string; token: string }> {
  try {
    const changes = await applyProvisioning(
      demoDir,
      {
        admin,
        store,
        loadDefinition: loadDefinitionFiles,
        loadPreparser: loadParserFile,
        alerting: alertingProvisioning(alerting, {
          log: createAuditLog({ redis, keys, retentionMs: config.auditRetentionDays * 86_400_000 }),
          actor: cliActor(),
        }),
      },
      provisioningVars,
    );
    say(`provisioned ${demoDir}: ${changes.length} change(s)`);
    const apiKey = demoPlan.environments.find((e) => e.name === DEMO_ENV)?.apiKeys[0]?.key ?? '';
    // One demo session token at a time: the previous run's token is revoked, a new one is shown.
    if ((await admin.listTokens(DEMO_ENV)).some((t) => t.name === TOKEN_NAME)) {
      await admin.revokeToken(DEMO_ENV, TOKEN_NAME);
    }
    // Scope admin: the demo's token also manages the environment (the management API, `vigil --url`).
    const { token } = await admin.createToken(DEMO_ENV, TOKEN_NAME, Date.now() + 7 * 86400_000, [
      'read',
      'write',
      'admin',
    ]);
    return { apiKey, token };
  } catch (err) {
    process.stderr.write(`vigil: demo provisioning failed: ${(err as Error).message}\n`);
    await alerting.close();
    await receiver.stop();
    await connections.close();
    await running.stop();
    process.exit(1);
  }
}

const { apiKey, token } = await prepareDemo();
const vigil = `VIGIL_CONFIG_FILE=${shownFile} npx vigil`;
const gateway = `http://127.0.0.1:${running.gatewayPort || config.gatewayPort}`;
const api = `http://127.0.0.1:${running.apiPort || config.apiPort}`;
process.stdout.write(
  [
    '',
    `Demo environment "${DEMO_ENV}" with devices device_1_hallway, device_2_rd_office, device_3_reception, and lora_greenhouse`,
    '  (a LoRaWAN node: its uplinks come as The Things Stack\'s webhook posts them to /tts/<KEY>, docs/lorawan.md).',
    `API key (gateway):  ${apiKey}`,
    `Bearer token (API): ${token}   (valid 7 days, scope read,write,admin; user demo / demo-password can also POST /login)`,
    '',
    `Web console: ${api}/console/`,
    `  sign in with environment ${DEMO_ENV}, username demo, password ${process.env.DEMO_PASSWORD ? '(your DEMO_PASSWORD)' : 'demo-password'}: an admin,`,
    '  who manages devices, definitions (edit, replay, publish, roll back), keys, users and alerting there',
    '',
    'Submit a reading:',
    `  curl -X POST ${gateway}/gateway/submit/${apiKey} -d '{"deviceName":"device_1_hallway","Temperature":21.4,"Humidity":45.2,"CO2":612}'`,
    'Read it back:',
    `  curl -G ${api}/sensors/list -H 'Authorization: Bearer ${token}' -d '{"deviceName":"device_1_hallway"}'`,
    `  curl -G ${api}/devices/list -H 'Authorization: Bearer ${token}'`,
    `  curl -G ${api}/events/list -H 'Authorization: Bearer ${token}'`,
    `What happened to submissions (the vigil command reaches this demo with its settings, secrets key included, in ${shownFile}):`,
    `  ${vigil} ingest log --env ${DEMO_ENV} --limit 20`,
    'Manage it over the API, as from a laptop (no settings, no Redis: the token is enough):',
    `  VIGIL_URL=${api} VIGIL_TOKEN=${token} npx vigil device list --env ${DEMO_ENV}`,
    `  curl -X POST ${api}/devices/update -H 'Authorization: Bearer ${token}' -d '{"deviceName":"device_1_hallway","labels":{"site":"amsterdam"}}'`,
    `Notifications (WARNING and above) go to the demo receiver at ${receiver.url}; each is printed below.`,
    `  ${vigil} notify log --env ${DEMO_ENV}`,
    `  ${vigil} channel test --env ${DEMO_ENV} --name demo-webhook`,
    '',
    'Everything listens on loopback addresses only. The published key, password and secrets key work only while the',
    'demo runs: `npm start` refuses them (`npx vigil env delete demo --force` removes the demo environment).',
    'Ctrl-C stops everything.',
    '',
  ].join('\n'),
);

const simulator =
  process.env.VIGIL_DEMO_SIMULATOR === '0' ? undefined : startSimulator({ gatewayUrl: gateway, apiKey });
stopOnSignals(async () => {
  simulator?.stop();
  await alerting.close();
  await receiver.stop();
  await connections.close();
  await running.stop();
});
