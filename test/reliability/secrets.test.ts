/**
 * Secrets stay secret: a whole Vigil process logging at debug level, driven with valid and invalid
 * API keys (HTTP path, MQTT topic and password), logins (right and wrong passwords) and bearer
 * tokens, and delivering notifications through channels with secrets (a webhook's signing secret
 * and header value, a Slack URL), never writes any of them to its log, and Redis holds none of them
 * in plain text (channel secrets only as ciphertext). (How secrets are compared is checked by the
 * unit tests of src/tenancy/secrets.ts.)
 */
import { execFileSync } from 'node:child_process';
import mqtt from 'mqtt';
import { describe, expect, it } from 'vitest';
import { freePort, isListening } from '../../scripts/lib/local-services.ts';
import { provisionComfort, queueIdle, startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { spawnVigil } from '../support/workers.ts';
import { ALERTING_TEST_CONFIG, alertingAdmin, until } from '../support/alerting.ts';
import { startHttpReceiver } from '../support/receivers.ts';

const PASSWORD = 'correct-horse-battery';
const WRONG_PASSWORD = 'wrong-horse-battery';

describe('secrets', () => {
  it('never logs keys, tokens or passwords, even at debug level', { timeout: 60_000 }, async () => {
    const p = await startPipeline({ roles: 'scheduler', ...ALERTING_TEST_CONFIG });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    const { token } = await p.admin.createToken('acme', 'cli', 0);
    await p.admin.createUser('acme', 'ann', PASSWORD);
    const alerting = alertingAdmin(p);
    const receiver = await startHttpReceiver();
    const HEADER_VALUE = 'Bearer hdr-secret-value-42';
    const URL_PASSWORD = 'url-pa55word-42';
    const QUERY_TOKEN = 'query-token-secret-42';
    const SLACK_TOKEN = 'slack-token-secret-42';
    const { secret: signingSecret = '' } = await alerting.createChannel('acme', {
      name: 'hook',
      type: 'webhook',
      url: `${receiver.url.replace('//', `//hook:${URL_PASSWORD}@`)}/hook?token=${QUERY_TOKEN}`,
      headers: [['Authorization', HEADER_VALUE]],
    });
    await alerting.createChannel('acme', {
      name: 'chat',
      type: 'slack',
      url: `${receiver.url}/services/${SLACK_TOKEN}`,
    });
    await alerting.createRoute('acme', { name: 'all', channels: ['hook', 'chat'] });
    const [api, gateway, broker] = [await freePort(), await freePort(), await freePort()];
    const vigil = spawnVigil(
      p.config,
      {
        VIGIL_ROLES: 'gateway,mqtt,worker,api,notifier',
        VIGIL_MQTT_ENABLED: 'true',
        VIGIL_API_PORT: String(api),
        VIGIL_GATEWAY_PORT: String(gateway),
        VIGIL_MQTT_PORT: String(broker),
        VIGIL_LOG_LEVEL: 'debug',
      },
      { captureOutput: true },
    );
    await eventually(() => isListening(api), { timeoutMs: 30_000, message: 'Vigil' });
    const wrongKey = `${key.slice(0, -4)}AAAA`;
    const wrongToken = `${token.slice(0, -4)}AAAA`;

    const post = (url: string, body: string, headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', body, headers }).then(async (r) => ({
        status: r.status,
        text: await r.text(),
      }));
    const g = `http://127.0.0.1:${gateway}`;
    const a = `http://127.0.0.1:${api}`;
    expect((await post(`${g}/gateway/submit/${key}`, '{"deviceName":"d1","Temperature":21}')).status).toBe(
      202,
    );
    expect((await post(`${g}/raw/${key}?deviceName=d1`, 'not json')).status).toBe(202);
    expect((await post(`${g}/gateway/submit/${wrongKey}`, '{"deviceName":"d1"}')).status).toBe(401);
    expect((await post(`${g}/gateway/submit/${key}`, '{"deviceName":"d1", broken')).status).toBe(400);
    const login = await post(`${a}/login/${key}`, JSON.stringify({ username: 'ann', password: PASSWORD }));
    expect(login.status).toBe(200);
    const loginToken = (JSON.parse(login.text) as { data: { token: string } }).data.token;
    expect(
      (await post(`${a}/login/${key}`, JSON.stringify({ username: 'ann', password: WRONG_PASSWORD }))).status,
    ).toBe(401);
    expect(
      (await post(`${a}/login/${wrongKey}`, JSON.stringify({ username: 'ann', password: PASSWORD }))).status,
    ).toBe(401);
    for (const t of [token, loginToken]) {
      expect((await post(`${a}/devices/list`, '{}', { authorization: `Bearer ${t}` })).status).toBe(200);
      expect((await post(`${a}/sensors/list`, '{}', { authorization: `Bearer ${t}` })).status).toBe(400);
    }
    expect((await post(`${a}/devices/list`, '{}', { authorization: `Bearer ${wrongToken}` })).status).toBe(
      401,
    );
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker}`, { username: 'dev', password: key });
    await client.publishAsync(`gateway/submit/${key}`, '{"deviceName":"d1","Temperature":22}', { qos: 1 });
    await client.publishAsync('gateway/submit', '{"deviceName":"d1","Temperature":23}', { qos: 1 });
    await client.endAsync();
    const refused = await new Promise<string>((resolve) => {
      const c = mqtt.connect(`mqtt://127.0.0.1:${broker}`, { password: wrongKey, reconnectPeriod: 0 });
      const settle = (outcome: string) => {
        c.end(true);
        resolve(outcome);
      };
      c.once('connect', () => settle('connected'));
      c.once('error', () => settle('refused'));
      c.once('close', () => settle('refused'));
    });
    expect(refused).toBe('refused');
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'payloads processed' });
    // Temperature 21 then 22 made no event; a WARNING is notified to both channels.
    expect((await post(`${g}/gateway/submit/${key}`, '{"deviceName":"d1","Temperature":27}')).status).toBe(
      202,
    );
    await until(() => receiver.accepted().length >= 2, 'both notifications');
    const hook = receiver.requests.find((r) => r.path === `/hook?token=${QUERY_TOKEN}`);
    expect(hook?.headers.authorization).toBe(HEADER_VALUE);
    await vigil.kill('SIGTERM');

    const log = vigil.output();
    expect(log).toMatch(/"level":20/); // debug lines were written
    const secrets = {
      key,
      wrongKey,
      token,
      wrongToken,
      loginToken,
      PASSWORD,
      WRONG_PASSWORD,
      signingSecret,
      signingKey: signingSecret.slice('whsec_'.length),
      HEADER_VALUE,
      URL_PASSWORD,
      QUERY_TOKEN,
      SLACK_TOKEN,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      expect(log.includes(secret), `${name} in the log`).toBe(false);
      expect(log.includes(encodeURIComponent(secret)), `${name} (URL-encoded) in the log`).toBe(false);
    }

    // Redis keeps hashes only: no secret appears in any key or value of this deployment.
    const dump: string[] = [];
    for (const k of await p.redis.keys(`${p.config.keyPrefix}:*`)) {
      dump.push(k);
      const type = await p.redis.type(k);
      if (type === 'string') dump.push((await p.redis.getBuffer(k))?.toString('latin1') ?? '');
      else if (type === 'hash') dump.push(...Object.entries(await p.redis.hgetall(k)).flat());
      else if (type === 'list') dump.push(...(await p.redis.lrange(k, 0, -1)));
      else if (type === 'set') dump.push(...(await p.redis.smembers(k)));
      else if (type === 'zset') dump.push(...(await p.redis.zrange(k, 0, -1)));
      else if (type === 'stream') dump.push(JSON.stringify(await p.redis.xrange(k, '-', '+')));
    }
    const everything = dump.join('\n');
    expect(everything).toContain('aes256gcm:'); // channel secrets are there, as ciphertext
    for (const [name, secret] of Object.entries(secrets)) {
      expect(everything.includes(secret), `${name} in Redis`).toBe(false);
    }
  });

  it('redacts secret fields wherever a logged object carries them', () => {
    const script = [
      "import { createLogger } from './src/log/logger.ts';",
      "const log = createLogger('debug');",
      "const s = 'vk_SECRETSECRETSECRETSECRET';",
      'log.info({ apiKey: s, token: s, password: s, authorization: s }, "top");',
      'log.info({ req: { headers: { authorization: "Bearer " + s } }, ctx: { apiKey: s, token: s, password: s } }, "nested");',
    ].join('\n');
    const out = execFileSync(
      new URL('../../node_modules/.bin/node', import.meta.url).pathname,
      ['--input-type=module', '-e', script],
      { cwd: new URL('../../', import.meta.url).pathname, encoding: 'utf8' },
    );
    expect(out.split('\n').filter(Boolean)).toHaveLength(2);
    expect(out).not.toContain('SECRET');
    expect(out).toContain('[redacted]');
  });
});
