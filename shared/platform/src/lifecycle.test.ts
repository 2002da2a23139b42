import { spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { closeServer, listen } from './lifecycle';

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

describe('closeServer', () => {
  it('When a client keeps sending on a kept-alive connection, then the stop answers it with Connection: close and ends well before the grace time-out', async () => {
    // The stop begins while the 5th request is in flight (its connection is busy, as under steady load).
    let served = 0;
    let stopping: Promise<number> | undefined;
    const { server, port } = await listen((_req, res) => {
      served++;
      if (served === 5) {
        const t0 = Date.now();
        stopping = closeServer(server, 5_000).then(() => Date.now() - t0);
      }
      setTimeout(() => res.end('ok'), 20);
    }, 0, '127.0.0.1');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const answers: Array<{ n: number; connection: string | undefined; socket: object }> = [];
    let refused = false;
    const one = (n: number) =>
      new Promise<void>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, agent }, (res) => {
          res.resume();
          res.on('end', () => {
            answers.push({ n, connection: res.headers.connection, socket: req.socket! });
            resolve();
          });
        });
        req.on('error', () => {
          refused = true; // the listener is closed: a balancer would send it to another replica
          resolve();
        });
      });
    for (let n = 1; !refused && n < 500; n++) await one(n);
    const tookMs = await stopping!;
    agent.destroy();
    // Before the fix the busy connection was served (keep-alive) until the 5 s grace cut it: ~200 answers here.
    expect(refused).toBe(true);
    expect(tookMs).toBeLessThan(2_000);
    expect(new Set(answers.map((a) => a.socket)).size).toBe(1);
    expect(answers.map((a) => a.connection)).toEqual(['keep-alive', 'keep-alive', 'keep-alive', 'keep-alive', 'keep-alive', 'close']);
    expect(server.listening).toBe(false);
  });
});
