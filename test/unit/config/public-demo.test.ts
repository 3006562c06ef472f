import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PUBLIC_DEMO, publicDemoKeyCheck, publicDemoLoginCheck } from '../../../src/config/public-demo.ts';
import { parseProvisioningFile } from '../../../src/tenancy/provisioning-plan.ts';

describe('the published demo secrets', () => {
  it('are the defaults of config/provisioning/demo', () => {
    const text = readFileSync('config/provisioning/demo/environments.yaml', 'utf8');
    const demo = parseProvisioningFile(text, {}).environments.find((e) => e.name === PUBLIC_DEMO.env);
    expect(demo?.apiKeys.map((k) => k.key)).toEqual([PUBLIC_DEMO.apiKey]);
    expect(demo?.users.map((u) => [u.username, u.password])).toEqual([
      [PUBLIC_DEMO.username, PUBLIC_DEMO.password],
    ]);
  });

  it.each([
    { demo: false, key: PUBLIC_DEMO.apiKey, refused: true },
    { demo: true, key: PUBLIC_DEMO.apiKey, refused: false },
    { demo: false, key: `${PUBLIC_DEMO.apiKey}x`, refused: false },
    { demo: false, key: 'vk_another_key_of_the_demo_environment', refused: false },
  ])('refuses the API key $key with VIGIL_DEMO=$demo: $refused', ({ demo, key, refused }) => {
    expect(publicDemoKeyCheck(demo)(key)).toBe(refused);
  });

  it.each([
    { demo: false, login: ['demo', 'demo', 'demo-password'], refused: true },
    { demo: true, login: ['demo', 'demo', 'demo-password'], refused: false },
    { demo: false, login: ['demo', 'demo', 'a password of its own'], refused: false },
    { demo: false, login: ['acme', 'demo', 'demo-password'], refused: false },
    { demo: false, login: ['demo', 'alice', 'demo-password'], refused: false },
  ])('refuses the sign-in $login with VIGIL_DEMO=$demo: $refused', ({ demo, login, refused }) => {
    const [env = '', username = '', password = ''] = login;
    expect(publicDemoLoginCheck(demo)(env, username, password)).toBe(refused);
  });
});
