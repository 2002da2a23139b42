import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PeerClient, ServiceClient, UpstreamUnavailableError } from '@polyphony/platform';
import { FakePeers, syntheticSongs, toSnapshotTrack } from '@polyphony/testkit';
import type { CataloguePort } from '../core/ports';
import type { SnapshotPageBytes } from '../maps/wire';
import { cataloguePort } from '../peers';
import { snapshotPages } from './snapshot-pages';

/**
 * A build stopped while the snapshot stream waits for its next page: the real catalogue client (PeerClient over
 * ServiceClient, whose idle limit between two chunks is set to 5 s here) against FakePeers holding every streamed page
 * after the first (`holdSnapshot`). The read must reject within 1 s of the abort, close the stream's connection, and
 * leave no listener on the build's signal.
 */
const IDLE_MS = 5_000;

let peers: FakePeers;
let server: Server;
let url: string;
/** The connections that carried a snapshot request, and whether each has closed. */
const streamSockets: Array<{ closed: boolean }> = [];
let release = () => {};

beforeAll(async () => {
  peers = new FakePeers();
  for (const s of syntheticSongs(30, { seed: 3 })) {
    const { mappings: _m, ...song } = toSnapshotTrack(s, []);
    peers.addSong(song);
  }
  // Its own server over the fake's app, to see the stream's connection close on the catalogue's side.
  server = createServer(peers.app());
  server.on('request', (req) => {
    if (!req.url?.startsWith('/internal/snapshot/tracks')) return;
    const entry = { closed: false };
    streamSockets.push(entry);
    req.socket.once('close', () => (entry.closed = true));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  release();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Polls `check` every 20 ms until it holds or `ms` pass; returns whether it held. */
async function within(ms: number, check: () => boolean): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

describe('snapshotPages abort', () => {
  test('When the build is aborted while the stream waits for a held page, then the read rejects within 1 s, the connection is closed and no abort listener is left', async () => {
    peers.holdSnapshot = new Promise<void>((r) => (release = r));
    const held = new Promise<void>((r) => (peers.onSnapshotHeld = r));
    const port = cataloguePort(new PeerClient(new ServiceClient(() => url, 'abort-test-secret', 'index', IDLE_MS), 'catalogue'));
    const controller = new AbortController();
    const pages = snapshotPages(port, { limit: 10, readAhead: 1, signal: controller.signal });

    const first = await pages.next();
    expect(first.done).toBe(false);
    expect(first.value?.tracks).toHaveLength(10);
    const pending = pages.next();
    await held;
    expect(peers.calls.snapshotStream).toBe(1);
    expect(streamSockets).toEqual([{ closed: false }]);

    const t0 = Date.now();
    controller.abort();
    // Without the abort handling the read waits for the client's idle limit (5 s), then reopens the stream.
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      pending.then(
        () => 'a page',
        (err: unknown) => err,
      ),
      new Promise((r) => (timer = setTimeout(() => r('still waiting after 2 s'), 2000))),
    ]);
    clearTimeout(timer);
    const elapsed = Date.now() - t0;
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe('snapshot read aborted');
    expect(elapsed).toBeLessThan(1000);
    expect(await within(1000, () => streamSockets[0]!.closed)).toBe(true);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // No reopening after the abort.
    expect(peers.calls.snapshotStream).toBe(1);
    expect(streamSockets).toHaveLength(1);
    expect(await pages.next()).toEqual({ done: true, value: undefined });
  });

  test('When the build is aborted while a cut stream waits to be reopened (backoff), then the read rejects at once and the stream is not reopened', async () => {
    const opened: Array<string | null> = [];
    const page: SnapshotPageBytes = { tracks: [{ itemId: 's1' } as unknown as SnapshotPageBytes['tracks'][number]], next: 's1', total: 2 };
    const port = {
      snapshotPage: async () => page,
      snapshotStream: async (after: string | null) => {
        opened.push(after);
        return {
          cancel: () => undefined,
          pages: (async function* () {
            if (after === null) yield page;
            throw new UpstreamUnavailableError('stream ended before its last page', 503);
          })(),
        };
      },
    } as unknown as CataloguePort;
    const controller = new AbortController();
    const resumes: number[] = [];
    // A 10 s first backoff: the read is aborted inside it.
    const pages = snapshotPages(port, { limit: 1, readAhead: 1, resumeDelayMs: 10_000, signal: controller.signal, onResume: (_e, _a, n) => resumes.push(n) });
    expect((await pages.next()).value).toBe(page);
    const pending = pages.next().then(
      () => 'a page',
      (err: unknown) => err,
    );
    expect(await within(1000, () => resumes.length === 1)).toBe(true);
    const t0 = Date.now();
    controller.abort();
    const outcome = await pending;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((outcome as Error).message).toBe('snapshot read aborted');
    // The backoff ended early without reopening the stream.
    await new Promise((r) => setTimeout(r, 100));
    expect(opened).toEqual([null]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
