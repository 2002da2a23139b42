/**
 * Worker-thread side of the parallel IVF build (`worker-pool.ts`). Receives the shared vector matrix
 * once (a Float32Array over a SharedArrayBuffer: no copy), then runs tasks:
 *  - `lloyd`: one second-level spherical Lloyd run over given rows (two-level training);
 *  - `nearest`: brute-force nearest centroid of given rows (coarse assignment of the training sample, flat builds);
 *  - `assign`: nearest centroid via `CentroidTree` of the rows [from, to), written into a shared Int32Array;
 *  - `place`: exact nearest centroid of given rows (`placeRows`, the kept-cell placement);
 *  - `job`: a job its user registered (`WorkerJobs`, loaded from `workerData.jobModules` at the first job).
 * Same kernels and seeds as the in-thread build, so the parallel build is bit-identical to it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { CooperativeScheduler } from './cooperative';
import { CentroidTree, nearestCentroids, sphericalLloyd } from './kmeans';
import { CentroidScan } from './centroid-scan';
import { placeRows } from './kept-cells';
import { ProductQuantiser, ScalarQuantiser } from './quantiser';
import { readSync } from 'node:fs';
import type { WorkerJobHandler, WorkerJobs, WorkerReply, WorkerTask } from './worker-pool';

let data: Float32Array = new Float32Array(0);
let dim = 0;
let tree: { key: number; tree: CentroidTree } | undefined;
// A worker has no queries to serve: one slice per task.
const scheduler = new CooperativeScheduler(1e12);
let jobs: Map<string, WorkerJobHandler> | undefined;

/** The registered job handlers (the job modules are required once, at the first job). */
function jobHandlers(): Map<string, WorkerJobHandler> {
  if (!jobs) {
    jobs = new Map();
    const files = ((workerData as { jobModules?: string[] } | null)?.jobModules ?? []);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    for (const file of files) for (const [kind, handler] of Object.entries((require(file) as { workerJobs: WorkerJobs }).workerJobs)) jobs.set(kind, handler);
  }
  return jobs;
}

async function run(task: WorkerTask): Promise<WorkerReply> {
  switch (task.type) {
    case 'init':
      data = new Float32Array(task.vectors);
      dim = task.dim;
      tree = undefined;
      return { id: task.id, type: 'init' };
    case 'lloyd': {
      const r = await sphericalLloyd({ data, dim, rows: task.rows }, task.k, { ...task.options, scheduler });
      return { id: task.id, type: 'lloyd', centroids: r.centroids, iterations: r.iterations, dotProducts: r.dotProducts, reseeds: r.reseeds };
    }
    case 'nearest': {
      const out = new Int32Array(task.rows.length);
      nearestCentroids(data, task.rows, 0, task.rows.length, task.centroids, task.k, dim, out);
      return { id: task.id, type: 'nearest', nearest: out };
    }
    case 'encode': {
      // Residuals of rows [from, to) read from the vector file, encoded into their slots.
      const q = task.quantiser.kind === 'int8' ? ScalarQuantiser.fromParams(task.dim, task.quantiser.params) : ProductQuantiser.fromParams(task.dim, task.quantiser.params);
      const d = task.dim;
      const cellOfRow = new Int32Array(task.cellOfRow);
      const slotOfRow = new Int32Array(task.slotOfRow);
      const codes = new Uint8Array(task.codes);
      const chunkRows = 1024;
      const chunk = new Float32Array(chunkRows * d);
      const bytes = Buffer.from(chunk.buffer);
      const r = new Float32Array(d);
      for (let r0 = task.from; r0 < task.to; r0 += chunkRows) {
        const rows = Math.min(chunkRows, task.to - r0);
        let done = 0;
        while (done < rows * d * 4) {
          const n = readSync(task.fd, bytes, done, rows * d * 4 - done, r0 * d * 4 + done);
          if (n === 0) throw new Error('vector file truncated');
          done += n;
        }
        for (let i = 0; i < rows; i++) {
          const c = cellOfRow[r0 + i]!;
          for (let t = 0; t < d; t++) r[t] = chunk[i * d + t]! - task.centroids[c * d + t]!;
          q.encode(r, 0, codes, slotOfRow[r0 + i]! * q.codeSize);
        }
      }
      return { id: task.id, type: 'encode', rows: task.to - task.from };
    }
    case 'job': {
      const handler = jobHandlers().get(task.kind);
      if (!handler) throw new Error(`no worker job registered as ${task.kind}`);
      return { id: task.id, type: 'job', output: await handler(task.input as never) };
    }
    case 'place': {
      const cells = new Int32Array(task.rows.length);
      placeRows(data, dim, task.rows, task.centroids, task.nlist, CentroidScan.fit(task.centroids, task.nlist, dim), cells);
      return { id: task.id, type: 'place', cells };
    }
    case 'assign': {
      if (!tree || tree.key !== task.treeKey) tree = { key: task.treeKey, tree: new CentroidTree(task.centroids, task.nlist, dim, task.groupOf, task.groupCount) };
      const out = new Int32Array(task.cellOfRow);
      const before = tree.tree.dotProducts;
      for (let r = task.from; r < task.to; r++) out[r] = tree.tree.nearest(data, r * dim, task.searchGroups);
      return { id: task.id, type: 'assign', dotProducts: tree.tree.dotProducts - before };
    }
  }
}

parentPort!.on('message', (task: WorkerTask) => {
  run(task).then(
    (reply) => parentPort!.postMessage(reply),
    (err: unknown) => parentPort!.postMessage({ id: task.id, type: 'error', message: (err as Error).message ?? String(err) } satisfies WorkerReply),
  );
});
