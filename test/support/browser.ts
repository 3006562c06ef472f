/**
 * A real Chromium for the console's browser tests, driven by playwright-core: the system's
 * chromium (Debian's package; VIGIL_CHROMIUM_PATH elsewhere), never a downloaded one. When it is
 * missing, only this test path installs it (apt-get, as root or with password-less sudo); where no
 * browser can be had, the tests fail with a message naming the package — they never skip.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
