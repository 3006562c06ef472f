/**
 * The demo's published secrets (config/provisioning/demo, `npm run demo`): anyone who has read the
 * repository knows them, so only the demo (VIGIL_DEMO, loopback addresses only) accepts them. A
 * plain start refuses them by comparing strings, without a lookup, so the check costs nothing on
 * the hot path.
 */
export const PUBLIC_DEMO = {
  env: 'demo',
  /** The default of DEMO_API_KEY in config/provisioning/demo. */
  apiKey: 'vk_demo_k3y_f0r_the_v1g1l_demo_0nly_d0_n0t_reuse',
  username: 'demo',
  /** The default of DEMO_PASSWORD in config/provisioning/demo. */
  password: 'demo-password',
  /** The VIGIL_SECRETS_KEY `npm run demo` sets when none is set. */
  secretsKey: 'dmlnaWwtZGVtby1zZWNyZXRzLWtleS1wdWJsaWMtMzI=',
} as const;

/**
 * Where `npm run demo` keeps its settings (relative to the checkout): its own file, never the one
 * `npm start` reads, so its public secrets key never reaches a plain start.
 */
export const DEMO_SETTINGS_FILE = 'var/demo/vigil.env';

const REMOVE_DEMO = 'Remove the demo environment (`npx vigil env delete demo --force`)';

/** Why each published secret is refused, and how to remove or re-key the demo environment. */
export const PUBLIC_DEMO_REFUSALS = {
  apiKey: `This is the demo's published API key, accepted only by \`npm run demo\` (VIGIL_DEMO). ${REMOVE_DEMO}, or give it a key of its own (\`npx vigil apikey revoke demo --env demo\`, then \`npx vigil apikey create --env demo\`).`,
  login: `This is the demo user's published password, accepted only by \`npm run demo\` (VIGIL_DEMO). ${REMOVE_DEMO}, or give the user a password of its own (\`npx vigil user password --env demo --username demo --password-stdin\`).`,
  secretsKey: `VIGIL_SECRETS_KEY is the demo's public key, accepted only by \`npm run demo\` (VIGIL_DEMO): anyone can read what it encrypts. Set a key of your own (\`openssl rand -base64 32\`); the demo's channel secrets cannot be read with it, so remove the demo environment (\`npx vigil env delete demo --force\`) or create its channels again.`,
} as const;

/**
 * A check for the demo's published API key: true (refuse) for that key unless `demo` (VIGIL_DEMO)
 * is on, false for every other key.
 */
export function publicDemoKeyCheck(demo: boolean): (apiKey: string) => boolean {
  return demo ? () => false : (apiKey) => apiKey === PUBLIC_DEMO.apiKey;
}

/**
 * A check for the demo user's published password: true (refuse) for the demo user signing in
 * with it unless `demo` (VIGIL_DEMO) is on.
 */
export function publicDemoLoginCheck(
  demo: boolean,
): (env: string, username: string, password: string) => boolean {
  if (demo) return () => false;
  return (env, username, password) =>
    env === PUBLIC_DEMO.env && username === PUBLIC_DEMO.username && password === PUBLIC_DEMO.password;
}
