import { UpstreamUnavailableError, AppError } from '@polyphony/platform';
import type { CataloguePort } from '../core/ports';
import type { SnapshotPageBytes } from '../maps/wire';
import { readAhead, snapshotPages } from './snapshot-pages';

/** A catalogue of `n` songs `s000`..., pages of `limit`; the stream can be cut after some pages, or not offered. */
function fakeCatalogue(n: number, opts: { stream: boolean; cuts?: number[]; failOpen?: AppError; olderAfterFirst?: boolean }) {
  const ids = Array.from({ length: n }, (_, i) => `s${String(i).padStart(3, '0')}`);
  const calls = { pages: 0, streams: [] as Array<string | null>, cancelled: 0 };
  const page = (after: string | null, limit: number): SnapshotPageBytes => {
    const start = after === null ? 0 : ids.indexOf(after) + 1;
    const slice = ids.slice(start, start + limit);
    calls.pages++;
    return {
      tracks: slice.map((itemId) => ({ itemId }) as unknown as SnapshotPageBytes['tracks'][number]),
      next: start + limit < ids.length ? slice[slice.length - 1]! : null,
      ...(after === null ? { total: n } : {}),
    };
  };
  const cuts = [...(opts.cuts ?? [])];
  const port = {
    snapshotPage: async (after: string | null, limit: number) => page(after, limit),
    ...(opts.stream
      ? {
          snapshotStream: async (after: string | null, limit: number) => {
            calls.streams.push(after);
            if (opts.failOpen) throw opts.failOpen;
            if (opts.olderAfterFirst) return { page: page(after, limit) };
            const cutAfter = cuts.shift();
            return {
              cancel: () => calls.cancelled++,
              pages: (async function* () {
                let at = after;
                for (let k = 0; ; k++) {
                  if (cutAfter !== undefined && k === cutAfter) throw new UpstreamUnavailableError('stream ended before its last page', 503);
                  const p = page(at, limit);
                  yield p;
                  if (p.next === null) return;
                  at = p.next;
                }
              })(),
            };
          },
        }
      : {}),
  } as unknown as CataloguePort;
  return { port, calls, ids };
}

async function collect(it: AsyncIterable<SnapshotPageBytes>): Promise<string[]> {
  const out: string[] = [];
  for await (const p of it) out.push(...p.tracks.map((t) => t.itemId));
  return out;
}

describe('snapshotPages', () => {
  test('When the catalogue streams, then every song comes once in order from one stream, and the first page carries total', async () => {
    const { port, calls, ids } = fakeCatalogue(23, { stream: true });
    const pages: SnapshotPageBytes[] = [];
    for await (const p of snapshotPages(port, { limit: 5, readAhead: 2 })) pages.push(p);
    expect(pages.flatMap((p) => p.tracks.map((t) => t.itemId))).toEqual(ids);
    expect(pages[0]!.total).toBe(23);
    expect(calls.streams).toEqual([null]);
  });

  test('When the stream is cut mid-way (twice), then it is reopened after the last complete page and no song is lost or repeated', async () => {
    const { port, calls, ids } = fakeCatalogue(23, { stream: true, cuts: [2, 1] });
    const resumed: Array<string | null> = [];
    const got = await collect(snapshotPages(port, { limit: 5, readAhead: 2, resumeDelayMs: 1, onResume: (_e, after) => resumed.push(after) }));
    expect(got).toEqual(ids);
    expect(calls.streams).toEqual([null, 's009', 's014']);
    expect(resumed).toEqual(['s009', 's014']);
  });

  test('When the stream keeps being cut without a page arriving, then the read fails after maxResumes reopenings with the catalogue error', async () => {
    const { port, calls } = fakeCatalogue(23, { stream: true, cuts: [1, 0, 0, 0] });
    await expect(collect(snapshotPages(port, { limit: 5, readAhead: 1, maxResumes: 2, resumeDelayMs: 1 }))).rejects.toThrow(/before its last page/);
    expect(calls.streams).toEqual([null, 's004', 's004']);
  });

  test('When opening the stream fails with a permanent error, then the read fails with it (no reopening)', async () => {
    const { port, calls } = fakeCatalogue(5, { stream: true, failOpen: new AppError('not_found', 'nope', 404) });
    await expect(collect(snapshotPages(port, { limit: 5, readAhead: 1, resumeDelayMs: 1 }))).rejects.toThrow('nope');
    expect(calls.streams).toHaveLength(1);
  });

  test('When the catalogue answers one page (older than the stream) or has no stream at all, then the snapshot is paged: same songs', async () => {
    const older = fakeCatalogue(23, { stream: true, olderAfterFirst: true });
    expect(await collect(snapshotPages(older.port, { limit: 5, readAhead: 2 }))).toEqual(older.ids);
    expect(older.calls.streams).toEqual([null]);
    expect(older.calls.pages).toBe(5);
    const none = fakeCatalogue(23, { stream: false });
    expect(await collect(snapshotPages(none.port, { limit: 5, readAhead: 2 }))).toEqual(none.ids);
    expect(none.calls.pages).toBe(5);
  });

  test('When the consumer stops early (an embedder switch restarts the snapshot), then the open stream is cancelled', async () => {
    const { port, calls } = fakeCatalogue(50, { stream: true });
    const it = snapshotPages(port, { limit: 5, readAhead: 2 });
    expect((await it.next()).value!.tracks[0]!.itemId).toBe('s000');
    await it.return(undefined);
    await new Promise((r) => setTimeout(r, 10));
    expect(calls.cancelled).toBe(1);
    // At most the read-ahead (2) plus the page under way were read past the consumer.
    expect(calls.pages).toBeLessThanOrEqual(4);
  });
});

describe('readAhead', () => {
  test('When the consumer is slower than the source, then items come in order, at most `depth` pulled ahead, and a source error comes after the items before it', async () => {
    let pulled = 0;
    let consumed = 0;
    let maxAhead = 0;
    async function* source() {
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 1));
        pulled++;
        maxAhead = Math.max(maxAhead, pulled - consumed);
        yield i;
      }
      throw new Error('boom');
    }
    const got: number[] = [];
    const err = await (async () => {
      for await (const x of readAhead(source(), 3)) {
        consumed++;
        got.push(x);
        await new Promise((r) => setTimeout(r, 3));
      }
    })().catch((e: unknown) => e);
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect((err as Error).message).toBe('boom');
    expect(maxAhead).toBeLessThanOrEqual(4);
    expect(maxAhead).toBeGreaterThanOrEqual(2);
  });
});
