import v8 from 'node:v8';

/** A build stopped because the JavaScript heap neared its limit (`--max-old-space-size`); the previous generation stays live. */
export class HeapLimitError extends Error {
  readonly code = 'heap_limit';
  constructor(
    readonly usedBytes: number,
    readonly limitBytes: number,
    readonly fraction: number,
  ) {
    const mib = (b: number) => Math.round(b / 1048576);
    super(
      `the JavaScript heap reached ${Math.round((100 * usedBytes) / limitBytes)}% of its limit (${mib(usedBytes)} of ${mib(limitBytes)} MiB, stop at ${Math.round(fraction * 100)}%): ` +
        'build stopped, the previous generation stays live; give the replica more heap (--max-old-space-size in NODE_OPTIONS, the pod memory limit) or a smaller INDEX_VECTOR_MODE (pq)',
    );
    this.name = 'HeapLimitError';
  }
}

/** Tunables of {@link guardHeap}. */
export interface HeapGuardOptions {
  /** Stop when used heap / heap limit exceeds this (default 0.9). */
  fraction?: number;
  /** Sampling interval, ms (default 50). */
  intervalMs?: number;
  /** Heap figures in bytes (default {@link oldGenerationStats}); tests inject. */
  stats?: () => { used: number; limit: number };
}

/**
 * Watches the V8 heap while a memory-hungry job (an index build) runs, and aborts it before V8 would end the process
 * with `FATAL ERROR: ... JavaScript heap out of memory` (issue 36, "the process near its memory limit"): every
 * `intervalMs` the used heap is compared with the heap limit; past `fraction` the returned `signal` aborts with a
 * {@link HeapLimitError} (also returned by `tripped()`), so the job stops at its next abort check and its garbage
 * can be collected. Works for a job that yields to the event loop (the build's cooperative scheduler yields every
 * 10 ms); one synchronous allocation larger than the remaining head-room is not caught. The timer does not keep the
 * process alive. `stop()` ends the watch (idempotent).
 * @param parent aborting it aborts `signal` too (the job's own cancel)
 */
export function guardHeap(parent: AbortSignal, options: HeapGuardOptions = {}): { signal: AbortSignal; tripped: () => HeapLimitError | undefined; stop: () => void } {
  const fraction = options.fraction ?? 0.9;
  const stats = options.stats ?? oldGenerationStats;
  const own = new AbortController();
  let error: HeapLimitError | undefined;
  const check = (): void => {
    const { used, limit } = stats();
    if (limit > 0 && used > fraction * limit && !error) {
      error = new HeapLimitError(used, limit, fraction);
      own.abort(error);
      clearInterval(timer);
    }
  };
  const timer = setInterval(check, options.intervalMs ?? 50);
  timer.unref();
  check();
  return {
    signal: AbortSignal.any([parent, own.signal]),
    tripped: () => error,
    stop: () => clearInterval(timer),
  };
}

/**
 * What V8 reserves for the young generation beside `--max-old-space-size`: 3 x the 16 MiB semi-space of 64-bit V8 (Node
 * 20: `heap_size_limit` = old-space limit + 48 MiB, measured for 48 and 1,024 MiB). With the index unit's
 * `--max-semi-space-size=2` (k8s/index.yaml) the reserve is 6 MiB, so the limit computed here reads 42 MiB below the
 * real one and a build stops that much earlier (the safe side; following the flag needs NODE_OPTIONS through config.ts).
 */
const YOUNG_GENERATION_RESERVE = 48 * 1048576;

/**
 * The heap the out-of-memory death is about: bytes used outside the young generation (which a scavenge empties) against
 * the old-generation limit (`heap_size_limit` minus the young-generation reserve, at least half of it). Comparing
 * `used_heap_size` with `heap_size_limit` instead misses a small heap: with `--max-old-space-size=48` the limit reads
 * 96 MiB, and V8 dies at ~48 MiB used, below any fraction over one half (measured).
 */
export function oldGenerationStats(): { used: number; limit: number } {
  const s = v8.getHeapStatistics();
  let young = 0;
  for (const space of v8.getHeapSpaceStatistics()) if (space.space_name === 'new_space' || space.space_name === 'new_large_object_space') young += space.space_used_size;
  return { used: s.used_heap_size - young, limit: Math.max(s.heap_size_limit - YOUNG_GENERATION_RESERVE, s.heap_size_limit / 2) };
}
