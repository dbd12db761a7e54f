// `npm start` on a fresh clone: installs what is missing (npm dependencies, the Temporal CLI),
// then hands over to the dev stack. Plain Node on purpose: it runs before any dependency exists.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (command, args) => {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

if (!existsSync(join(root, 'node_modules', '.package-lock.json'))) {
  console.error('Installing npm dependencies (npm ci)…');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}
run(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'setup.ts')]);
// The stack handles Ctrl-C itself; forward the signals that reach only us (e.g. from npm or a test).
const stack = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'dev-stack.ts')], {
  cwd: root,
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stack.kill(signal));
stack.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
