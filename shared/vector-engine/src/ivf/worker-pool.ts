import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '@polyphony/platform';
import { IvfBuildAbortedError, IvfInputError } from './errors';
import type { LloydOptions } from './lloyd-options';

/**
 * A job kind registered by a pool's user: the handler runs in every worker thread. A job module (a file
 * named in `IvfWorkerPool`'s `jobModules`, see `moduleFile`) exports `workerJobs: WorkerJobs`, mapping job
 * kinds to handlers. Input and output cross threads by structured clone (typed arrays are copied unless
 * shared), so handlers take and return plain data. The engine knows nothing of what a job computes.
 */
export type WorkerJobHandler = (input: never) => unknown;
/** What a job module exports as `workerJobs`. */
export type WorkerJobs = Readonly<Record<string, WorkerJobHandler>>;

/** Messages to a build worker (`ivf-worker.ts`). Typed arrays are copied by structured clone unless shared. */
export type WorkerTask =
  | { id: number; type: 'init'; vectors: SharedArrayBuffer; dim: number }
  | { id: number; type: 'lloyd'; rows: Int32Array; k: number; options: Omit<LloydOptions, 'scheduler'> }
  | { id: number; type: 'nearest'; rows: Int32Array; centroids: Float32Array; k: number }
  | {
      id: number;
      type: 'assign';
      from: number;
      to: number;
      /** Identifies the centroid set, so a worker builds its CentroidTree once per build. */
      treeKey: number;
      centroids: Float32Array;
      nlist: number;
      groupOf: Int32Array;
      groupCount: number;
      searchGroups: number;
      cellOfRow: SharedArrayBuffer;
    }
  | {
      id: number;
      type: 'encode';
      /** Descriptor of the VectorFile (descriptors are shared by the threads of a process). */
      fd: number;
      dim: number;
      from: number;
      to: number;
      /** Unit centroids (`nlist * dim`). */
      centroids: Float32Array;
      cellOfRow: SharedArrayBuffer;
      slotOfRow: SharedArrayBuffer;
      quantiser: { kind: 'int8' | 'pq'; params: Float32Array };
      codes: SharedArrayBuffer;
    }
  | {
      id: number;
      /** Kept-cell placement (`assignKeptCells`): each of `rows` to its nearest of the `nlist` centroids, exactly. */
      type: 'place';
      rows: Int32Array;
      centroids: Float32Array;
      nlist: number;
    }
  | {
      id: number;
      /** A registered job (`WorkerJobs`): `kind` names the handler, `input` is its argument. */
      type: 'job';
      kind: string;
      input: unknown;
    };

/** Replies of a build worker. */
export type WorkerReply =
  | { id: number; type: 'init' }
  | { id: number; type: 'lloyd'; centroids: Float32Array; iterations: number; dotProducts: number; reseeds: number }
  | { id: number; type: 'nearest'; nearest: Int32Array }
  | { id: number; type: 'assign'; dotProducts: number }
  | { id: number; type: 'encode'; rows: number }
  | { id: number; type: 'place'; cells: Int32Array }
  | { id: number; type: 'job'; output: unknown }
  | { id: number; type: 'error'; message: string };

type Pending = { resolve: (r: WorkerReply) => void; reject: (e: Error) => void };
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * A fixed pool of worker threads for the CPU-heavy phases of an IVF build (second-level k-means runs,
 * coarse assignment of the training sample, final assignment of every row) and of the jobs its user registers
 * (`jobModules`, `runJob`; the index service fits its artist mixtures this way). The vector matrix lives in a
 * SharedArrayBuffer handed to every worker once; tasks carry only row lists and centroids. Tasks queue
 * and go to the next idle worker. `close()` terminates the workers (always call it, e.g. in `finally`).
 *
 * Under ts-jest (the module is a .ts file) the worker transpiles its TypeScript sources with the
 * `typescript` package on the fly; the compiled service runs `ivf-worker.js` directly.
 */
export class IvfWorkerPool {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: Array<{ task: WorkerTask; pending: Pending }> = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failure: Error | undefined;

  /**
   * @param size number of threads, >= 1
   * @param signal aborts every pending task (IvfBuildAbortedError)
   * @param jobModules absolute files of job modules (each exports `workerJobs: WorkerJobs`), loaded by each
   *   worker at its first `runJob`
   */
  constructor(
    readonly size: number,
    private readonly signal?: AbortSignal,
    jobModules: readonly string[] = [],
  ) {
    if (!Number.isInteger(size) || size < 1) throw new IvfInputError(`worker count must be a positive integer, got ${size}`);
    // An abort rejects every pending task at once; the build's finally terminates the workers.
    signal?.addEventListener('abort', () => this.fail(new IvfBuildAbortedError()), { once: true });
    if (signal?.aborted) this.fail(new IvfBuildAbortedError());
    for (let i = 0; i < size; i++) {
      const worker = startModuleWorker(__dirname, 'ivf-worker', { jobModules });
      worker.on('message', (reply: WorkerReply) => this.onReply(worker, reply));
      worker.on('error', (err) => this.fail(err));
      this.workers.push(worker);
      this.idle.push(worker);
    }
  }

  /** Shares the vector matrix (must be backed by a SharedArrayBuffer) with every worker. */
  async share(vectors: Float32Array, dim: number): Promise<void> {
    if (!(vectors.buffer instanceof SharedArrayBuffer) || vectors.byteOffset !== 0) throw new IvfInputError('the build pool needs vectors at the start of a SharedArrayBuffer');
    await Promise.all(this.workers.map((w) => this.post(w, { id: this.nextId++, type: 'init', vectors: vectors.buffer as SharedArrayBuffer, dim })));
  }

  /** Runs one task on the next idle worker. @throws the worker's error, or IvfBuildAbortedError */
  run(task: DistributiveOmit<WorkerTask, 'id'>): Promise<WorkerReply> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.signal?.aborted) return Promise.reject(new IvfBuildAbortedError());
    const full = { ...task, id: this.nextId++ } as WorkerTask;
    return new Promise<WorkerReply>((resolve, reject) => {
      const pending = { resolve, reject };
      const w = this.idle.pop();
      if (w) this.send(w, full, pending);
      else this.queue.push({ task: full, pending });
    });
  }

  /**
   * Runs the registered job `kind` (see `WorkerJobs`) on the next idle worker and resolves with its output.
   * @throws the handler's error, an unknown kind, or IvfBuildAbortedError
   */
  async runJob<O>(kind: string, input: unknown): Promise<O> {
    const reply = await this.run({ type: 'job', kind, input });
    if (reply.type !== 'job') throw new Error(`IVF build worker: unexpected ${reply.type} reply to job ${kind}`);
    return reply.output as O;
  }

  /** Terminates every worker; pending tasks are rejected. */
  async close(): Promise<void> {
    this.fail(new IvfBuildAbortedError());
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private post(w: Worker, task: WorkerTask): Promise<WorkerReply> {
    this.idle.splice(this.idle.indexOf(w), 1);
    return new Promise((resolve, reject) => this.send(w, task, { resolve, reject }));
  }

  private send(w: Worker, task: WorkerTask, pending: Pending): void {
    this.pending.set(task.id, pending);
    w.postMessage(task);
  }

  private onReply(worker: Worker, reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    const next = this.queue.shift();
    if (next) this.send(worker, next.task, next.pending);
    else this.idle.push(worker);
    if (!p) return;
    if (reply.type === 'error') p.reject(new Error(`IVF build worker: ${reply.message}`));
    else p.resolve(reply);
  }

  private fail(err: Error): void {
    if (!this.failure) this.failure = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const q of this.queue.splice(0)) q.pending.reject(err);
  }
}
