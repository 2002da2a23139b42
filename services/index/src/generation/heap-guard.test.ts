import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { guardHeap, HeapLimitError } from './heap-guard';

/**
 * A job shaped like an index build (allocates in steps and yields to the event loop between them, keeping what it
 * made) in a real Node process with a small heap (`--max-old-space-size`). With the guard it is stopped with a
 * HeapLimitError, drops its garbage and the process goes on working (as a replica keeps serving its previous
 * generation); without it V8 ends the process. Reads the built module (`npm run build`).
 */
function runJob(guarded: boolean): { status: number | null; stdout: string; stderr: string } {
  const script = `
    const { guardHeap } = require('./dist/generation/heap-guard.js');
    const parent = new AbortController();
    const heap = ${guarded ? 'guardHeap(parent.signal, { fraction: 0.8, intervalMs: 20 })' : '{ signal: parent.signal, tripped: () => undefined, stop() {} }'};
    const kept = [];
    (async () => {
      try {
        for (let step = 0; step < 100000; step++) {
          if (heap.signal.aborted) throw heap.signal.reason;
          // ~0.5 MB of small objects per step (rows, ids: what the old space holds), kept as a build keeps its rows.
          kept.push(Array.from({ length: 10000 }, (_, i) => ({ id: 'song-' + step + '-' + i, v: i })));
          await new Promise((r) => setImmediate(r));
        }
        console.log('job finished');
      } catch (err) {
        console.log('job stopped: ' + err.name + ': ' + err.message);
      } finally {
        heap.stop();
      }
      kept.length = 0;
      // The process goes on: more (bounded) work after the stop.
      let sum = 0;
      for (let round = 0; round < 20; round++) {
        const rows = Array.from({ length: 10000 }, (_, i) => ({ v: i }));
        sum += rows.length;
        await new Promise((r) => setTimeout(r, 5));
      }
      console.log('still serving ' + sum);
    })();
  `;
  const r = spawnSync(process.execPath, ['--max-old-space-size=48', '-e', script], { cwd: path.join(__dirname, '../..'), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('guardHeap (a build near the heap limit)', () => {
  it('When a job without the guard outgrows a 48 MiB heap, then V8 ends the process (what the guard prevents)', () => {
    const r = runJob(false);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/heap out of memory|Reached heap limit/);
    expect(r.stdout).not.toContain('still serving');
  });

  it('When the guarded job nears the 48 MiB heap limit, then it stops with a HeapLimitError naming the limit and the process keeps working', () => {
    const r = runJob(true);
    expect(r.stderr).not.toMatch(/heap out of memory/);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/job stopped: HeapLimitError: the JavaScript heap reached \d+% of its limit \(\d+ of \d+ MiB, stop at 80%\)/);
    expect(r.stdout).toContain('the previous generation stays live');
    expect(r.stdout).toContain('still serving 200000');
  });

  it('When used heap passes the fraction, then the signal aborts with the error; the parent abort passes through', async () => {
    let used = 10;
    const g = guardHeap(new AbortController().signal, { fraction: 0.5, intervalMs: 5, stats: () => ({ used, limit: 100 }) });
    expect(g.signal.aborted).toBe(false);
    used = 60;
    await new Promise((r) => setTimeout(r, 30));
    expect(g.signal.aborted).toBe(true);
    expect(g.signal.reason).toBeInstanceOf(HeapLimitError);
    expect(g.tripped()?.message).toContain('60% of its limit');
    g.stop();
    const parent = new AbortController();
    const h = guardHeap(parent.signal, { stats: () => ({ used: 1, limit: 100 }) });
    parent.abort(new Error('cancelled'));
    expect(h.signal.aborted).toBe(true);
    expect(h.tripped()).toBeUndefined();
    h.stop();
  });
});
