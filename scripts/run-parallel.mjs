// Runs npm scripts at the same time and fails when any of them fails: `node scripts/run-parallel.mjs lint typecheck`.
// `npm test` uses it for eslint and the type check, two single-threaded programs that need nothing from each other
// (both read the built dist of `npm run build`): on the 2-core CI machine the pair takes about as long as the
// longer one instead of their sum. Each script's output is held and printed whole when it ends (no interleaving),
// headed by its name, exit status and wall seconds. Exit status: 0 when every script passed, else 1.
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
if (!names.length) {
  console.error('usage: node scripts/run-parallel.mjs <npm script> [<npm script> ...]');
  process.exit(2);
}

/** Runs `npm run <name>`; resolves with its exit code (1 when it was killed by a signal) and merged output. */
function run(name) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('npm', ['run', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('error', (err) => chunks.push(Buffer.from(`${err.message}\n`)));
    child.on('close', (code, signal) => {
      const status = code ?? 1;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`\n--- npm run ${name}: ${status === 0 ? 'passed' : `FAILED (exit ${code ?? signal})`} in ${seconds} s\n`);
      process.stdout.write(Buffer.concat(chunks));
      resolve(status);
    });
  });
}

const codes = await Promise.all(names.map(run));
process.exit(codes.every((c) => c === 0) ? 0 : 1);
