#!/usr/bin/env node
// Brings a fresh clone to a runnable state, on whatever node the machine has (>= 18):
// installs npm dependencies (which include Node 24 from the npm registry, package `node@24`)
// and the local servers Vigil needs (redis-server, influxd; mosquitto for the bridge tests), and
// bundles the console's definition editor (CodeMirror, with esbuild) into var/console-assets/.
// Every `npm run …` entry point calls this first; it does nothing when all is in place.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const say = (msg) => {
  if (!quiet) process.stderr.write(`[setup] ${msg}\n`);
};

function depsAreCurrent() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const nodeBin = join(root, 'node_modules', '.bin', 'node');
  if (!existsSync(marker) || !existsSync(nodeBin)) return false;
  return statSync(marker).mtimeMs >= statSync(join(root, 'package-lock.json')).mtimeMs - 1000;
}

function installDeps() {
  say('installing npm dependencies (includes Node 24 from the npm registry)…');
  // `npm install`, not `npm ci`: it installs what package-lock.json pins, but tolerates optional
  // platform packages the registry does not serve in the locked version (msgpackr-extract's
  // darwin/win32 builds), which make `npm ci` refuse the whole lock file.
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: root,
    stdio: 'inherit',
  });
}

function has(binary) {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
}

function installServers() {
  const wanted = [
    ['redis-server', 'redis-server'],
    ['influxd', 'influxdb'],
    ['mosquitto', 'mosquitto'],
  ].filter(([bin]) => !has(bin) && !existsSync(`/usr/sbin/${bin}`));
  if (wanted.length === 0) return;
  const packages = wanted.map(([, pkg]) => pkg);
  if (!has('apt-get')) {
    process.stderr.write(
      `[setup] Vigil needs ${packages.join(', ')} and this system has no apt-get.\n` +
        '        Install them with your package manager, or run the stack with `docker compose up`.\n',
    );
    process.exit(1);
  }
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  say(`installing ${packages.join(', ')} with apt-get…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => {
    const [cmd, ...rest] = [...sudo, ...args];
    execFileSync(cmd, rest, { stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit'], env });
  };
  try {
    run(['apt-get', 'update', '-qq']);
    run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages]);
  } catch {
    process.stderr.write(
      `[setup] could not install ${packages.join(', ')} with apt-get` +
        (sudo.length
          ? ' (sudo needs a password? run: sudo apt-get install ' + packages.join(' ') + ')'
          : '') +
        '.\n        Alternatively run the stack with `docker compose up`.\n',
    );
    process.exit(1);
  }
}

if (!depsAreCurrent()) installDeps();
installServers();
const version = execFileSync(join(root, 'node_modules', '.bin', 'node'), ['-v'])
  .toString()
  .trim();
if (!/^v2[4-9]\./.test(version)) {
  process.stderr.write(`[setup] expected Node 24 in node_modules/.bin/node, found ${version}\n`);
  process.exit(1);
}
// The console's editor bundle: built when missing or stale (src/console/editor-bundle.ts decides, by
// the hash of what it is built from), so that a fresh clone's `npm test` and `npm run demo` serve it.
execFileSync(join(root, 'node_modules', '.bin', 'node'), [join(root, 'src', 'console', 'editor-bundle.ts')], {
  cwd: root,
  stdio: ['ignore', 'inherit', quiet ? 'ignore' : 'inherit'],
});
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
say(`ready: ${pkg.name} on node ${version}`);
