/**
 * Shared helpers of the provider-client integration tests (clients against the testkit fakes).
 */
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeCatalogue, FakeTrack } from '@polyphony/testkit';
import type { ClientOptions } from '../src/options';
import type { ProviderTrack } from '../src/types';

/** Client options for tests: no retries, fast backoff, short timeouts. */
export const TEST_CLIENT_OPTIONS: ClientOptions = { retries: 0, backoffMs: 1, timeoutMs: 10_000 };

/** Drains an async iterable of pages into one array, counting pages. */
export async function collectPages<T>(pages: AsyncIterable<T[]>): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let n = 0;
  for await (const page of pages) {
    n++;
    items.push(...page);
  }
  return { items, pages: n };
}

/** Pages yielded before the iteration threw, and the error (undefined when it completed). */
export async function drainUntilError<T>(pages: AsyncIterable<T[]>): Promise<{ yielded: number; error: unknown }> {
  let yielded = 0;
  try {
    for await (const page of pages) yielded += page.length;
  } catch (err) {
    return { yielded, error: err };
  }
  return { yielded, error: undefined };
}

/** A URL on 127.0.0.1 where nothing listens (a port bound and released). */
export async function closedUrl(): Promise<string> {
  const port = await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const p = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(p));
    });
  });
  return `http://127.0.0.1:${port}`;
}

/** A temp directory removed by the returned cleanup. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'ms-int-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** What a client must report for a catalogue track; units already converted to the ProviderTrack ones. */
export interface Expectation {
  /** The path the kind reports (Jellyfin/Emby/Plex/Lyrion: the catalogue path; Navidrome fake: relative). */
  path?: string;
  /** Duration tolerance in seconds (whole-second kinds: < 1). */
  durationTolerance: number;
  /** Whether the kind exposes last-played. */
  lastPlayed: boolean;
  /** Whether the kind exposes the album artist. */
  albumArtist: boolean;
}

/** Asserts the normalised fields of one ProviderTrack against its catalogue track. */
export function expectTrack(actual: ProviderTrack | undefined, t: FakeTrack, e: Expectation): void {
  expect(actual).toBeDefined();
  const a = actual as ProviderTrack;
  expect(a.title).toBe(t.title);
  expect(a.artist).toBe(t.artist);
  expect(a.album).toBe(t.album);
  if (e.albumArtist) expect(a.albumArtist).toBe(t.albumArtist);
  expect(a.year).toBe(t.year);
  expect(a.rating).toBe(t.rating);
  expect(a.durationSeconds).toBeDefined();
  expect(Math.abs((a.durationSeconds ?? 0) - t.durationSeconds)).toBeLessThan(e.durationTolerance);
  if (e.path !== undefined) expect(a.path).toBe(e.path);
  expect(a.playCount ?? 0).toBe(t.playCount);
  if (e.lastPlayed) expect(a.lastPlayed).toBe(t.playCount > 0 ? t.lastPlayed : undefined);
  else expect(a.lastPlayed).toBeUndefined();
}

/** The `n` most recently played catalogue tracks, newest first (ties by catalogue order). */
export function recentlyPlayed(cat: FakeCatalogue, n: number): FakeTrack[] {
  return [...cat]
    .filter((t) => t.playCount > 0 && t.lastPlayed)
    .sort((a, b) => (b.lastPlayed as string).localeCompare(a.lastPlayed as string))
    .slice(0, n);
}

/** The `n` most played catalogue tracks (play count descending). */
export function mostPlayed(cat: FakeCatalogue, n: number): FakeTrack[] {
  return [...cat].filter((t) => t.playCount > 0).sort((a, b) => b.playCount - a.playCount).slice(0, n);
}

/** What every fake media server offers that the shared hooks need. */
export interface StartableFake {
  start(): Promise<{ url: string; close(): Promise<void> }>;
  failAfterPages(pages: number | null): void;
}

/**
 * Registers the hooks every client-vs-fake suite needs: a fake over the small (real-music) catalogue
 * and one over the big synthetic catalogue, started before the suite, closed after it, and with
 * injected page failures reset after each test. Read the started pair from `current` in a later hook.
 */
export function useFakePair<F extends StartableFake>(make: (catalogue: FakeCatalogue) => F, small: FakeCatalogue, big: FakeCatalogue) {
  const pair = {} as { fake: F; server: { url: string; close(): Promise<void> }; bigFake: F; bigServer: { url: string; close(): Promise<void> } };
  beforeAll(async () => {
    pair.fake = make(small);
    pair.server = await pair.fake.start();
    pair.bigFake = make(big);
    pair.bigServer = await pair.bigFake.start();
  });
  afterAll(async () => {
    await pair.server?.close();
    await pair.bigServer?.close();
  });
  afterEach(() => {
    pair.fake?.failAfterPages(null);
    pair.bigFake?.failAfterPages(null);
  });
  return { current: pair };
}
