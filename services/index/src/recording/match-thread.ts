import type { Worker } from 'node:worker_threads';
import type { LandmarkIndex, LandmarkIndexShape, Landmarks, MatchOptions, MatchReport } from '@polyphony/landmarks';
import { startModuleWorker } from '@polyphony/vector-engine';

/** Messages to the match worker (match-worker.ts). */
export type MatchRequest =
  | { kind: 'load'; id: number; handle: number; shape: LandmarkIndexShape }
  | { kind: 'drop'; handle: number }
  | { kind: 'match'; id: number; handle: number; pcm: Float32Array; mask?: Uint8Array; options: Omit<MatchOptions, 'allow'> }
  | { kind: 'matchLandmarks'; id: number; handle: number; landmarks: Landmarks; mask?: Uint8Array; options: Omit<MatchOptions, 'allow'> };

/** Releases a loaded index's copy in the worker once the main thread's handle is garbage-collected. */
const dropper = new FinalizationRegistry<{ thread: MatchThread; handle: number }>(({ thread, handle }) => thread.drop(handle));

/**
 * One worker thread that runs recording matches (`LandmarkMatcher`) off the index service's event loop, so a slow
 * query (a clip searched over the whole speed grid at 100k songs: ~0.1-0.4 s of CPU) does not hold other routes.
 * Queries run one at a time in the worker, in arrival order. The worker holds a copy of each loaded index's offsets
 * (4 MiB per 65,536 rows) and of resident postings; file-backed postings are read from the main thread's file
 * descriptor, so the main thread's `LandmarkIndex` must stay referenced while its handle is (the service keeps both
 * in one object). Enabled by `RECORDING_MATCH_THREAD=1` (default off).
 */
export class MatchThread {
  private worker?: Worker;
  private next = 1;
  private readonly pending = new Map<number, { resolve: (r: MatchReport | null) => void; reject: (e: Error) => void }>();
  /** Handles of the indexes the current worker holds (a new worker after an exit holds none). */
  private readonly loaded = new Set<number>();

  /** Starts the worker on first use. */
  private get thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startModuleWorker(__dirname, 'match-worker');
    worker.unref();
    worker.on('message', (msg: { id: number; report?: MatchReport | null; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p.reject(new Error(msg.error));
      else p.resolve(msg.report ?? null);
    });
    const fail = (err: Error) => {
      if (this.worker !== worker) return; // an earlier worker's late event: the current one is not affected
      this.worker = undefined;
      this.loaded.clear();
      const failed = new MatchThreadError(err.message);
      for (const p of this.pending.values()) p.reject(failed);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`recording match thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  private call(msg: MatchRequest & { id: number }, transfer: ArrayBuffer[] = []): Promise<MatchReport | null> {
    return new Promise((resolve, reject) => {
      this.pending.set(msg.id, { resolve, reject });
      this.thread.postMessage(msg, transfer);
    });
  }

  /**
   * Sends `index` to the worker; resolves to its handle. `owner` is the object that keeps `index` alive (its
   * collection releases the worker's copy).
   */
  async load(index: LandmarkIndex, owner: object): Promise<number> {
    const handle = this.next++;
    await this.call({ kind: 'load', id: this.next++, handle, shape: index.shape() });
    this.loaded.add(handle);
    dropper.register(owner, { thread: this, handle });
    return handle;
  }

  /**
   * Whether the running worker holds the index of `handle`: false after the worker exited (a crash, or close()),
   * since a new worker starts empty; the caller loads the index again ({@link load}) before matching.
   */
  holds(handle: number): boolean {
    return this.worker !== undefined && this.loaded.has(handle);
  }

  /** `LandmarkMatcher.match` in the worker; `pcm` is copied, `mask` (one byte per row, 1 = visible, a fresh array) transferred. */
  async match(handle: number, pcm: Float32Array, mask: Uint8Array | undefined, options: Omit<MatchOptions, 'allow'>): Promise<MatchReport> {
    return (await this.call({ kind: 'match', id: this.next++, handle, pcm, ...(mask ? { mask } : {}), options }, mask ? [mask.buffer as ArrayBuffer] : []))!;
  }

  /** `LandmarkMatcher.matchLandmarks` in the worker. */
  async matchLandmarks(handle: number, landmarks: Landmarks, mask: Uint8Array | undefined, options: Omit<MatchOptions, 'allow'>): Promise<MatchReport> {
    return (await this.call({ kind: 'matchLandmarks', id: this.next++, handle, landmarks, ...(mask ? { mask } : {}), options }, mask ? [mask.buffer as ArrayBuffer] : []))!;
  }

  /** Releases the worker's copy of an index (no answer). */
  drop(handle: number): void {
    this.loaded.delete(handle);
    this.worker?.postMessage({ kind: 'drop', handle } satisfies MatchRequest);
  }

  /**
   * Stops the worker: queries in flight fail with {@link MatchThreadError}; a later call starts a new, empty worker
   * (it holds no index until {@link load}).
   */
  async close(): Promise<void> {
    const w = this.worker;
    if (w) await w.terminate(); // its 'exit' fails the pending queries and forgets the loaded handles
    if (this.worker === w) {
      this.worker = undefined;
      this.loaded.clear();
    }
  }
}

/**
 * The match worker stopped (crashed, ran out of memory, or was closed) while a query was in flight: the query was
 * not answered; the next one starts a new worker. Not an error of the clip (the service answers 503).
 */
export class MatchThreadError extends Error {
  constructor(reason: string) {
    super(`recording match thread stopped: ${reason}`);
    this.name = 'MatchThreadError';
  }
}
