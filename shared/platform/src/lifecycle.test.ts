import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** Runs a small script in a fresh Node process (the guard changes process-wide behaviour). */
function run(script: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'), encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const REJECT_THEN_LIVE = `
  Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5'), { code: 'ECONNREFUSED' }));
  setTimeout(() => { console.log('still alive'); process.exit(0); }, 200);
`;

describe('guardUnhandledRejections', () => {
  it('When nothing guards the process, then an unhandled rejection exits it with code 1 (the Node default the guard exists for)', () => {
    const r = run(REJECT_THEN_LIVE);
    expect(r.status).toBe(1);
    expect(r.stdout).not.toContain('still alive');
  });

  it('When the guard is installed, then the process keeps running and logs the rejection at error level with its code', () => {
    const r = run(`
      const { guardUnhandledRejections, createLogger } = require('./dist');
      guardUnhandledRejections(createLogger({ service: 'guard-test' }));
      ${REJECT_THEN_LIVE}
    `);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('still alive');
    const line = `${r.stdout}\n${r.stderr}`.split('\n').find((l) => l.includes('unhandled promise rejection'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: 'error', err: { message: 'connect ECONNREFUSED 127.0.0.1:5', code: 'ECONNREFUSED' } });
  });
});
