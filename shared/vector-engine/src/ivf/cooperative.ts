import { IvfBuildAbortedError } from './errors';

/**
 * Lets a long CPU-bound build share the Node event loop with request handling: call `maybeYield()` often
 * (every few thousand multiply-adds is fine, the check is one clock read); once `sliceMs` of work has run
 * since the last yield it awaits a macrotask (`setImmediate`), so pending I/O callbacks and queries run.
 * A query therefore waits at most about one slice while a rebuild is in progress.
 * Also the cancellation point: throws IvfBuildAbortedError when `signal` has fired.
 */
export class CooperativeScheduler {
  private last = performance.now();
  /** Number of times control was handed back to the event loop. */
  yields = 0;
  /** Longest stretch between two yields seen so far, in ms (wall clock, so it includes preemption). */
  longestSliceMs = 0;

  constructor(
    private readonly sliceMs: number = 10,
    private readonly signal?: AbortSignal,
  ) {}

  /** Yields when the current slice is used up; throws when aborted. */
  async maybeYield(): Promise<void> {
    if (performance.now() - this.last < this.sliceMs) return;
    await this.yieldNow();
  }

  /** Unconditionally yields one macrotask turn. */
  async yieldNow(): Promise<void> {
    this.longestSliceMs = Math.max(this.longestSliceMs, performance.now() - this.last);
    this.throwIfAborted();
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.yields++;
    this.last = performance.now();
    this.throwIfAborted();
  }

  /** @throws IvfBuildAbortedError when the signal has fired. */
  throwIfAborted(): void {
    if (this.signal?.aborted) throw new IvfBuildAbortedError();
  }
}
