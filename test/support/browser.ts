/**
 * A real Chromium for the console's browser tests, driven by playwright-core: the system's
 * chromium (Debian's package; VIGIL_CHROMIUM_PATH elsewhere), never a downloaded one. When it is
 * missing, only this test path installs it (apt-get, as root or with password-less sudo); where no
 * browser can be had, the tests fail with a message naming the package — they never skip.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const DEFAULT_PATH = '/usr/bin/chromium';
const PACKAGE = 'chromium';

/** Flags for a quiet, headless, self-contained browser (playwright adds --headless). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

function installChromium(): void {
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!hasApt) return;
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args: string[]) => {
    const [cmd = '', ...rest] = [...sudo, ...args];
    execFileSync(cmd, rest, { stdio: ['ignore', 'ignore', 'inherit'], env });
  };
  try {
    run(['apt-get', 'update', '-qq']);
    run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', PACKAGE]);
  } catch {
    // Reported below as a missing browser.
  }
}

/** The browser's executable: VIGIL_CHROMIUM_PATH, or Debian's chromium (installed when missing). */
export function chromiumPath(): string {
  const wanted = process.env.VIGIL_CHROMIUM_PATH;
  if (wanted) {
    if (!existsSync(wanted)) throw new Error(`VIGIL_CHROMIUM_PATH=${wanted} does not exist.`);
    return wanted;
  }
  if (!existsSync(DEFAULT_PATH)) installChromium();
  if (!existsSync(DEFAULT_PATH)) {
    throw new Error(
      `The console's browser tests need Chromium: install the "${PACKAGE}" package ` +
        `(apt-get install ${PACKAGE}) or set VIGIL_CHROMIUM_PATH to a Chromium or Chrome executable.`,
    );
  }
  return DEFAULT_PATH;
}

/**
 * Launches headless Chromium. playwright gives every launch a new, empty profile directory (its
 * user-data dir) and removes it on close.
 */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

/**
 * Signs in through the console's form in a new page of `context` and waits for the fleet page
 * (the console's first page after sign-in).
 */
export async function openSignedIn(
  context: BrowserContext,
  baseUrl: string,
  who: { env: string; username: string; password: string },
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${baseUrl}/console/sign-in`);
  await page.getByLabel('Environment').fill(who.env);
  await page.getByLabel('Username').fill(who.username);
  await page.getByLabel('Password', { exact: true }).fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}/console/fleet`);
  return page;
}

/**
 * Where the pixels of about `rgb` (each channel within `tolerance`, opaque) are in the first canvas
 * under `selector`: how many, and the leftmost and rightmost column as fractions of its width
 * (null when there are none). How a test sees what uPlot drew.
 */
export async function canvasPixels(
  page: Page,
  selector: string,
  rgb: readonly [number, number, number],
  tolerance = 40,
): Promise<{ count: number; left: number | null; right: number | null }> {
  // A string: the test project has no DOM types, the page runs it as it is.
  return page.evaluate(`(() => {
    const [r, g, b] = ${JSON.stringify(rgb)};
    const canvas = document.querySelector(${JSON.stringify(`${selector} canvas`)});
    const ctx = canvas && canvas.getContext('2d');
    if (!ctx) return { count: 0, left: null, right: null };
    const { data, width } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    let count = 0, left = Infinity, right = -Infinity;
    for (let i = 0; i < data.length; i += 4) {
      const near = Math.abs(data[i] - r) <= ${tolerance} && Math.abs(data[i + 1] - g) <= ${tolerance} &&
        Math.abs(data[i + 2] - b) <= ${tolerance} && data[i + 3] > 200;
      if (!near) continue;
      count += 1;
      const x = (i / 4) % width;
      left = Math.min(left, x);
      right = Math.max(right, x);
    }
    return count === 0 ? { count, left: null, right: null } : { count, left: left / width, right: right / width };
  })()`);
}
