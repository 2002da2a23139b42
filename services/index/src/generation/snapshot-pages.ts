import { setTimeout as delay } from 'node:timers/promises';
import { isTransientFault, jitteredBackoffMs } from '@polyphony/platform';
import type { CataloguePort } from '../core/ports';
import type { SnapshotPageBytes } from '../maps/wire';

/**
 * Snapshot pages decoded ahead of the build: with the page the build is writing and the catalogue's own look-ahead,
 * ~4 pages in flight (a 5,000-song page is 5-10 MB).
 */
export const SNAPSHOT_READ_AHEAD = 2;

/** The build's `onResume`: a warning in the log and a line in the task's log. */
export function logResume(host: { logger: { warn(message: string, fields?: Record<string, unknown>): void }; note(line: string): void }): NonNullable<SnapshotPagesOptions['onResume']> {
  return (err, after, attempt) => {
    host.logger.warn('catalogue snapshot stream cut; reading on after the last complete page', { after, attempt, err: (err as Error).message });
    host.note(`snapshot stream cut after ${after ?? 'the start'} (${(err as Error).message}); reading on (attempt ${attempt})`);
  };
}

/** How `snapshotPages` reads the catalogue. */
export interface SnapshotPagesOptions {
  /** Songs per page. */
  limit: number;
  /** Pages decoded ahead of the consumer (>= 1; default SNAPSHOT_READ_AHEAD). */
  readAhead?: number;
  /** Times a cut stream is reopened after its last complete page without a page arriving in between (default 5). */
  maxResumes?: number;
  /** First delay before reopening, ms (doubled each time, jittered; default 200, capped at 5,000). */
  resumeDelayMs?: number;
  /** Called before each reopening (logging). */
  onResume?: (err: unknown, after: string | null, attempt: number) => void;
  /**
   * The build's abort: the iteration then rejects at once, even while it waits for a page (an open stream is
   * cancelled: its connection closed; a reopening's backoff is cut short). Its listeners are removed when the read ends.
   */
  signal?: AbortSignal;
}

/** The error an aborted read rejects with. */
function abortedRead(): Error {
  return new Error('snapshot read aborted');
}

/**
 * Every page of the catalogue's snapshot in order, each once, for the build's snapshot phase:
 *  - the snapshot stream when the catalogue serves it (`CataloguePort.snapshotStream`: one answer, the catalogue reads
 *    its next pages while this process works on the previous ones), decoded `readAhead` pages ahead of the consumer
 *    (`readAhead`), so the catalogue's reads, the transfer and this process's work overlap;
 *  - a stream cut mid-way (the catalogue restarted, a reset, an idle timeout: a transient fault) is reopened after the
 *    last complete page (keyset `after`), up to `maxResumes` times in a row with jittered exponential backoff; any
 *    page arriving resets the count. Opening a stream is retried by the peer client as a page request is;
 *  - a catalogue that answers one page instead (older than the stream) is paged (`snapshotPage`) with one page
 *    of look-ahead, as the build did before.
 * Ending the iteration early (an embedder switch restarts the snapshot) closes the open stream; so does an abort of
 * `options.signal`, which also rejects a wait for the next page at once (not after the client's idle timeout).
 * @throws the catalogue's error when a page cannot be had (non-transient, or transient after `maxResumes` reopenings)
 */
export async function* snapshotPages(catalogue: CataloguePort, options: SnapshotPagesOptions): AsyncGenerator<SnapshotPageBytes> {
  const source = catalogue.snapshotStream ? streamedPages(catalogue, options) : pagedPages(catalogue, null, options.limit);
  yield* readAhead(source, Math.max(1, options.readAhead ?? SNAPSHOT_READ_AHEAD), options.signal);
}

/** Pages by requests of one page each, the next requested as soon as the current one arrived. */
async function* pagedPages(catalogue: CataloguePort, after: string | null, limit: number): AsyncGenerator<SnapshotPageBytes> {
  let next: Promise<SnapshotPageBytes> | undefined = catalogue.snapshotPage(after, limit);
  try {
    while (next) {
      const page: SnapshotPageBytes = await next;
      next = page.next && page.tracks.length > 0 ? catalogue.snapshotPage(page.next, limit) : undefined;
      yield page;
    }
  } finally {
    // A look-ahead nobody will read (the consumer stopped): its failure is not an unhandled rejection.
    next?.catch(() => undefined);
  }
}

/** The stream, reopened after its last complete page when it is cut; paging when the catalogue does not stream. */
async function* streamedPages(catalogue: CataloguePort, options: SnapshotPagesOptions): AsyncGenerator<SnapshotPageBytes> {
  const maxResumes = options.maxResumes ?? 5;
  let after: string | null = null;
  let failures = 0;
  for (;;) {
    const signal = options.signal;
    if (signal?.aborted) throw abortedRead();
    const open = await catalogue.snapshotStream!(after, options.limit);
    if ('page' in open) {
      yield open.page;
      if (open.page.next && open.page.tracks.length > 0) yield* pagedPages(catalogue, open.page.next, options.limit);
      return;
    }
    // An abort while a page is awaited closes the connection: the pending read fails at once.
    const cancel = () => open.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      if (signal?.aborted) throw abortedRead();
      for await (const page of open.pages) {
        failures = 0;
        after = page.next;
        yield page;
        if (page.next === null || page.tracks.length === 0) return;
      }
      return;
    } catch (err) {
      // The cut of a cancelled stream is not a fault to resume after.
      if (signal?.aborted) throw abortedRead();
      if (!isTransientFault(err) || ++failures > maxResumes) throw err;
      options.onResume?.(err, after, failures);
      await delay(jitteredBackoffMs(failures, options.resumeDelayMs ?? 200, 5000), undefined, signal ? { signal } : undefined).catch(() => undefined);
    } finally {
      signal?.removeEventListener('abort', cancel);
      open.cancel();
    }
  }
}

/**
 * Pulls up to `depth` items of `source` ahead of the consumer (one pull at a time, in order). An error of the source
 * reaches the consumer after the items pulled before it. Ending the consumer's iteration stops the pulls and ends
 * the source (its `finally` blocks run once its pending pull settles; not awaited here). An abort of `abort` rejects the
 * consumer's iteration at once, even while it waits for an item (the source's own abort handling ends its pull).
 */
export async function* readAhead<T>(source: AsyncGenerator<T>, depth: number, abort?: AbortSignal): AsyncGenerator<T> {
  const queue: T[] = [];
  let done = false;
  let stopped = false;
  let failure: { err: unknown } | undefined;
  let wake: (() => void) | undefined;
  let space: (() => void) | undefined;
  const signal = (which: 'wake' | 'space') => {
    const f = which === 'wake' ? wake : space;
    if (which === 'wake') wake = undefined;
    else space = undefined;
    f?.();
  };
  // The producer: pulls while the queue has room, sleeps while it is full.
  const producer = (async () => {
    try {
      while (!stopped) {
        if (queue.length >= depth) {
          await new Promise<void>((resolve) => (space = resolve));
          continue;
        }
        const r = await source.next();
        if (r.done) break;
        queue.push(r.value);
        signal('wake');
      }
    } catch (err) {
      failure = { err };
    } finally {
      done = true;
      signal('wake');
    }
  })();
  const onAbort = () => signal('wake');
  abort?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (abort?.aborted) throw abortedRead();
      if (queue.length > 0) {
        const item = queue.shift()!;
        signal('space');
        yield item;
        continue;
      }
      if (done) {
        if (failure) throw failure.err;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    abort?.removeEventListener('abort', onAbort);
    // Not awaited: a pull under way (a network read) settles first, then the source ends (a stream is closed).
    stopped = true;
    signal('space');
    void producer.then(() => source.return(undefined)).catch(() => undefined);
  }
}
