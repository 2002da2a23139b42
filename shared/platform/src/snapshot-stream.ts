import type { Response } from 'express';
import { SNAPSHOT_STREAM_TYPE, encodeSnapshotPage, snapshotFramePrefix, type SnapshotTrackBytes } from '@polyphony/contracts';
import type { Logger } from './logger';

/** One snapshot page as a producer reads it (`next` = the page's last id, null on the last page). */
export interface SnapshotStreamPage {
  tracks: readonly SnapshotTrackBytes[];
  next: string | null;
  total?: number;
}

/**
 * Answers a snapshot request with every page from `after` on in one response (`SNAPSHOT_STREAM_TYPE`, contracts
 * snapshot-binary.ts): each page read by `readPage` (keyset paging, its own short query), encoded as a binary page
 * and written as one length-prefixed frame. The next page is read while the current one is encoded and written
 * (one page of look-ahead), and a full socket buffer pauses the reads until it drains (backpressure: at most the
 * page being written, the one read ahead and the socket's buffers are held), so the producer's reads overlap the
 * consumer's work. The first page is read before the headers are sent: a failure there throws (the caller's error
 * answer, e.g. 503). A later failure cannot change the status any more: it is logged and the connection destroyed,
 * so the consumer sees a truncated stream (no page with `next: null`) and resumes after its last complete page.
 * A consumer that goes away stops the reads.
 * @returns the number of pages written
 */
export async function sendSnapshotStream(res: Response, readPage: (after: string | undefined) => Promise<SnapshotStreamPage>, after: string | undefined, logger?: Logger): Promise<number> {
  let closed = false;
  const onClose = () => (closed = true);
  res.on('close', onClose);
  let page = await readPage(after);
  res.status(200).type(SNAPSHOT_STREAM_TYPE);
  let pages = 0;
  let ahead: Promise<SnapshotStreamPage> | undefined;
  try {
    for (;;) {
      ahead = page.next !== null && page.tracks.length > 0 ? readPage(page.next) : undefined;
      // A look-ahead that fails while this page is written is handled where it is awaited.
      ahead?.catch(() => undefined);
      const body = encodeSnapshotPage(page);
      res.write(snapshotFramePrefix(body));
      const flowing = res.write(body);
      pages++;
      if (!flowing && !closed) await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
      if (closed || !ahead) break;
      page = await ahead;
      ahead = undefined;
    }
    if (!closed) res.end();
  } catch (err) {
    logger?.warn('snapshot stream stopped mid-way; the reader resumes after its last complete page', { pages, err: (err as Error).message });
    res.destroy(err as Error);
  } finally {
    res.off('close', onClose);
  }
  return pages;
}
