/**
 * The console's parser workbench over real HTTP, against a whole Vigil (gateway, worker, API with
 * the console): each environment's runs go to an isolate of its own.
 */
import { describe, expect, it } from 'vitest';
import { COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { consoleClient, formToken, signIn, type ConsoleClient } from './console-client.ts';

const PASSWORD = 'correct horse battery';
const COMFORT_PAGE = '/console/definitions/private/ComfortSensors';

/** Fills its environment's heap on every run, keeping what it got, and answers normally. */
const FILLS_HEAP =
  'var hoard = []; function parsePayload(s) {' +
  ' try { for (;;) hoard.push(new Float64Array(131072)); } catch (e) {}' +
  ' return { Temperature: hoard.length }; }';

/** A signed-in client of `username` (created with `role`) in `env`. */
async function user(p: Pipeline, env: string, username: string, role: 'operator' | 'viewer' = 'operator') {
  await p.admin.createUser(env, username, PASSWORD, role);
  const c = consoleClient(p.apiUrl);
  await signIn(c, env, username, PASSWORD);
  return c;
}

interface WorkbenchAnswer {
  status: number;
  retryAfter: string | null;
  html: string;
  /** The code of the page's error notice, if any. */
  errorCode: string | undefined;
  /** The code of the run's failure, if it failed. */
  runCode: string | undefined;
}

/** Presses Run (or Replay) on a definition's page, as the form does. */
async function press(
  c: ConsoleClient,
  page: string,
  fields: { action: 'run' | 'replay'; payload?: string; device?: string },
): Promise<WorkbenchAnswer> {
  const token = await formToken(await c.get(page));
  const res = await c.post(page, { _csrf: token, payload: '', device: '', ...fields });
  const html = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    html,
    errorCode: /class="notice notice-error"[^>]*><span class="mono code">([A-Z_]+)<\/span>/.exec(html)?.[1],
    runCode: /id="run-result">\s*<h3>The parser failed<\/h3>\s*<p><span class="mono code">([A-Z_]+)</.exec(
      html,
    )?.[1],
  };
}

const run = (c: ConsoleClient, page: string, payload: string) => press(c, page, { action: 'run', payload });

/** The current value a successful run shows for `sensor`. */
const shownValue = (html: string, sensor: string) =>
  new RegExp(`data-sensor="${sensor}">[\\s\\S]*?data-label="Current value" class="value">([^<]*)<`).exec(
    html,
  )?.[1];

describe('console parser workbench', () => {
  it("runs one environment's parser after another environment's run filled its heap", async () => {
    const p = await startPipeline({ roles: 'api', sandboxTimeoutMs: 1000 });
    await provisionComfort(p, 'evil', []);
    await p.admin.applyDefinition(
      { kind: 'private', env: 'evil' },
      { ...COMFORT_SPEC, name: 'Hoard' },
      FILLS_HEAP,
    );
    await provisionComfort(p, 'victim', []);
    const eve = await user(p, 'evil', 'eve');
    const vic = await user(p, 'victim', 'vic');

    const evil = await run(eve, '/console/definitions/private/Hoard', '{}');
    expect([evil.status, evil.runCode]).toEqual([200, undefined]);
    const victim = await run(vic, COMFORT_PAGE, JSON.stringify({ Temperature: 21.5 }));
    expect([victim.status, victim.runCode]).toEqual([200, undefined]);
    expect(shownValue(victim.html, 'Temperature')).toBe('21.5 °C');
  });
});
