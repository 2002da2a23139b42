/**
 * The media-server client contract: the behaviour every kind's client must show against its
 * spec-faithful fake (testkit), 41 real Wesnoth tracks for metadata, downloads and lyrics and a
 * synthetic catalogue for paging, the library filter and playlists larger than one batch. The
 * kinds differ only in what their fixture says (kind.ts).
 */
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { syntheticCatalogue, wesnothTracks } from '@polyphony/testkit';
import { BadCredentialsError, UnreachableError } from '../../src/errors';
import { createMediaServerClient } from '../../src/factory';
import type { ClientOptions } from '../../src/options';
import type { MediaServerClient, ServerConnection } from '../../src/types';
import { TEST_CLIENT_OPTIONS, closedUrl, collectPages, drainUntilError, expectTrack, mostPlayed, recentlyPlayed, tempDir, useFakePair } from '../helpers';
import type { ContractFake, FakePair, KindContext, KindFixture } from './kind';

/** Registers the contract suite of one kind. */
export function mediaServerContract<F extends ContractFake>(k: KindFixture<F>): void {
  describe(k.title, () => {
    const wesnoth = wesnothTracks();
    const synthetic = syntheticCatalogue(k.syntheticSize);
    const started = useFakePair((catalogue) => k.make(catalogue), wesnoth, synthetic);
    const pair = (): FakePair<F> => started.current as FakePair<F>;
    const connect = (f: F, s: { url: string }, over: Partial<ServerConnection> = {}, opts: ClientOptions = {}): MediaServerClient =>
      createMediaServerClient({ type: k.type, creds: k.creds(f, s.url), ...over }, { ...TEST_CLIENT_OPTIONS, ...opts });
    const ctx: KindContext<F> = {
      wesnoth,
      synthetic,
      pair,
      connect,
      client: (over, opts) => connect(pair().fake, pair().server, over, opts),
      bigClient: (over, opts) => connect(pair().bigFake, pair().bigServer, over, opts),
    };
    const { client, bigClient } = ctx;
    const sameLibraries = (actual: Array<{ id: string }>, expected: ReturnType<typeof k.connection.libraries>): void => {
      if (expected.every((e) => typeof e === 'string')) expect(actual.map((l) => l.id)).toEqual(expected);
      else expect(actual).toEqual(expected);
    };

    it('When the credentials are right, then testConnection is ok with the music libraries, a sample and the path format', async () => {
      const { fake } = pair();
      if (k.connection.clearFirst) fake.core.clearRequests();
      const r = await client().testConnection();
      expect(r.ok).toBe(true);
      if (k.connection.serverName !== undefined) expect(r.serverName).toBe(k.connection.serverName);
      if (k.connection.version) expect(r.version).toBe(k.connection.version(fake));
      sameLibraries(r.libraries, k.connection.libraries(fake));
      expect(r.sampleTrackCount).toBe(k.connection.sampleTrackCount);
      expect(r.pathsLookAbsolute).toBe(k.connection.pathsLookAbsolute);
      k.connection.check?.(fake, r);
    });

    it('When libraries are listed, then exactly the music libraries come back', async () => {
      sameLibraries(await client().listLibraries(), k.connection.libraries(pair().fake));
    });

    it("When asked which libraries the account sees (issue 34), then its own music libraries come back by the listing's ids (Lyrion: none, null)", async () => {
      const seen = await client().visibleLibraries();
      if (k.type === 'lyrion') expect(seen).toBeNull();
      else expect((seen ?? []).map((l) => l.id)).toEqual(k.connection.libraries(pair().fake).map((l) => (typeof l === 'string' ? l : l.id)));
    });

    if (k.badCreds) {
      const bad = k.badCreds.bind(k);
      it('When the credentials are wrong, then testConnection reports bad_credentials and calls throw BadCredentialsError', async () => {
        const { fake, server } = pair();
        const c = client({ creds: bad(fake, server.url) });
        const r = await c.testConnection();
        expect(r.ok).toBe(false);
        expect(r.errorKind).toBe('bad_credentials');
        await expect(c.listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
      });
    }

    it('When nothing listens at the URL, then testConnection reports unreachable and calls throw UnreachableError', async () => {
      const url = await closedUrl();
      const c = client({ creds: k.creds(pair().fake, url) });
      const r = await c.testConnection();
      expect(r.ok).toBe(false);
      expect(r.errorKind).toBe('unreachable');
      await expect(c.listLibraries()).rejects.toBeInstanceOf(UnreachableError);
    });

    it('When the catalogue is enumerated, then every track arrives once with its normalised fields', async () => {
      const { fake } = pair();
      const { items } = await collectPages(client().iterateTracks());
      expect(items).toHaveLength(wesnoth.size);
      expect(new Set(items.map((t) => t.id)).size).toBe(wesnoth.size);
      const byId = new Map(items.map((t) => [t.id, t]));
      for (const t of wesnoth) {
        const got = byId.get(k.idOf(fake, t));
        expectTrack(got, t, k.enumeration.expectation(fake, t));
        if (k.enumeration.integerDurations) expect(Number.isInteger(got?.durationSeconds)).toBe(true);
      }
      const pattern = k.enumeration.idPattern;
      if (pattern) expect(items.every((t) => pattern.test(t.id))).toBe(true);
    });

    it('When there are more tracks than one page, then pages advance until the end and every track comes once', async () => {
      const { bigFake } = pair();
      bigFake.core.clearRequests();
      const musicLibraries = k.paging.musicLibraries?.(bigFake);
      const { items, pages } = await collectPages(bigClient(musicLibraries ? { musicLibraries } : {}).iterateTracks());
      const expected = k.paging.expectedIds?.(bigFake, synthetic) ?? synthetic.indicesIn().map((i) => k.bigIdAt(bigFake, i));
      expect(items).toHaveLength(expected.length);
      expect(new Set(items.map((t) => t.id)).size).toBe(expected.length);
      expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
      expect(pages).toBe(k.paging.pages);
      expect(k.paging.pageMarks(bigFake)).toEqual(k.paging.expectedMarks);
      k.paging.check?.(bigFake);
      const libraryOf = k.paging.libraryOf?.(bigFake, synthetic);
      if (libraryOf) expect(items.filter((t) => t.libraryId !== libraryOf.get(t.id)).map((t) => [t.id, t.libraryId])).toEqual([]);
      else expect(items.filter((t) => t.libraryId !== undefined)).toEqual([]);
      expect(items.filter((t) => (k.paging.fileStamps ? !/^size:[1-9]\d*$/.test(t.fileStamp ?? '') : t.fileStamp !== undefined)).slice(0, 3)).toEqual([]);
    });

    /** Provider ids of the `n` most recently added synthetic albums whose tracks are in `scope` (all when undefined). */
    const newestAlbumIds = (n: number, scope?: ReadonlySet<string>): string[] => {
      const { bigFake } = pair();
      const added = (a: { trackIndices: number[] }) => synthetic.trackAt(a.trackIndices[0] ?? 0).addedAt;
      return [...synthetic.albums()]
        .map((a) => ({ a, ids: a.trackIndices.map((i) => k.bigIdAt(bigFake, i)) }))
        .filter(({ ids }) => !scope || scope.has(ids[0] ?? ''))
        .sort((x, y) => added(y.a).localeCompare(added(x.a)))
        .slice(0, n)
        .flatMap(({ ids }) => ids);
    };

    it('When the 3 newest albums are asked, then exactly their tracks come, once each, newest album first', async () => {
      const { bigFake } = pair();
      const musicLibraries = k.paging.musicLibraries?.(bigFake);
      const scope = k.paging.expectedIds ? new Set(k.paging.expectedIds(bigFake, synthetic)) : undefined;
      const { items, pages } = await collectPages(bigClient(musicLibraries ? { musicLibraries } : {}).iterateRecentAlbumTracks(3));
      const expected = newestAlbumIds(3, scope);
      expect(expected.length).toBeGreaterThan(3);
      expect(items.map((t) => t.id)).toEqual(expected);
      expect(pages).toBe(3);
    });

    const filter = k.filter;
    if (filter) {
      it('When a library filter is set, then only that library is enumerated', async () => {
        const { bigFake } = pair();
        const { items } = await collectPages(bigClient({ musicLibraries: filter.musicLibraries(bigFake, synthetic) }).iterateTracks());
        const expected = filter.expectedIds(bigFake, synthetic);
        expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
        filter.check?.(items, synthetic);
      });

      it('When a library filter is set, then the newest albums are those of the filtered libraries', async () => {
        const { bigFake } = pair();
        const scope = new Set(filter.expectedIds(bigFake, synthetic));
        const { items } = await collectPages(bigClient({ musicLibraries: filter.musicLibraries(bigFake, synthetic) }).iterateRecentAlbumTracks(2));
        expect(items.map((t) => t.id)).toEqual(newestAlbumIds(2, scope));
      });
    }

    it('When the server fails mid-enumeration, then the iteration throws instead of ending early', async () => {
      const { bigFake } = pair();
      bigFake.failAfterPages(k.failure.afterPages ?? 1);
      const musicLibraries = k.failure.musicLibraries;
      const { yielded, error } = await drainUntilError(bigClient(musicLibraries ? { musicLibraries } : {}).iterateTracks());
      expect(yielded).toBe(k.failure.yielded);
      expect(error).toBeInstanceOf(UnreachableError);
    });

    it('When a track is downloaded, then the file holds the original bytes', async () => {
      const { fake } = pair();
      fake.core.clearRequests();
      const { dir, cleanup } = await tempDir();
      try {
        const t = wesnoth.byId(k.download.track);
        if (!t) throw new Error('fixture missing');
        const dest = join(dir, 'song.ogg');
        const n = await client().downloadTrack(k.idOf(fake, t), dest);
        const [got, want] = await Promise.all([readFile(dest), readFile(t.audioFile)]);
        expect(n).toBe(want.length);
        expect(got.equals(want)).toBe(true);
        k.download.check?.(fake);
      } finally {
        await cleanup();
      }
    });

    if (k.paging.fileStamps) {
      it('When a file is replaced in place by other audio (issue 35), then the listing keeps its id, its stamp becomes the new size, and a download gives the new bytes', async () => {
        const { fake } = pair();
        const t = wesnoth.byId(k.download.track);
        if (!t) throw new Error('fixture missing');
        const before = await collectPages(client().iterateTracks());
        const id = k.idOf(fake, t);
        const oldStamp = before.items.find((x) => x.id === id)?.fileStamp;
        expect(oldStamp).toBe(`size:${statSync(t.audioFile).size}`);
        const other = [...wesnoth].find((x) => x.id !== t.id && statSync(x.audioFile).size !== statSync(t.audioFile).size);
        if (!other) throw new Error('no other Wesnoth file of another size');
        wesnoth.update(t.id, { audioFile: other.audioFile });
        const { dir, cleanup } = await tempDir();
        try {
          const after = await collectPages(client().iterateTracks());
          const listed = after.items.find((x) => x.id === id);
          // Same path as listed before (the file was replaced where it was).
          expect(listed?.path).toBe(before.items.find((x) => x.id === id)?.path);
          expect(listed?.path).toBeTruthy();
          expect(listed?.fileStamp).toBe(`size:${statSync(other.audioFile).size}`);
          expect(listed?.fileStamp).not.toBe(oldStamp);
          // Every other track keeps its stamp.
          const stamps = new Map(before.items.map((x) => [x.id, x.fileStamp]));
          expect(after.items.filter((x) => x.id !== id && stamps.get(x.id) !== x.fileStamp).map((x) => x.id)).toEqual([]);
          const dest = join(dir, 'song.ogg');
          await client().downloadTrack(id, dest);
          expect((await readFile(dest)).equals(await readFile(other.audioFile))).toBe(true);
        } finally {
          wesnoth.update(t.id, { audioFile: t.audioFile });
          await cleanup();
        }
      });
    }

    it('When a playlist exceeds one batch, then it is written in batches, listed with its count and deleted', async () => {
      const { bigFake } = pair();
      const p = k.playlist;
      bigFake.core.clearRequests();
      const ids = Array.from({ length: p.size }, (_, i) => p.idAt(bigFake, i, synthetic));
      const c = bigClient();
      const pl = await c.createPlaylist(p.name, ids);
      expect(pl.trackCount).toBe(p.size);
      expect(p.stored(bigFake).find((s) => s.id === pl.id)?.trackIds).toEqual(ids);
      p.checkWrites(bigFake);
      expect(await c.listPlaylists()).toContainEqual(p.listsTrackCount ? { id: pl.id, name: p.name, trackCount: p.size } : { id: pl.id, name: p.name });
      await c.deletePlaylist(pl.id);
      expect(p.stored(bigFake).some((s) => s.id === pl.id)).toBe(false);
      expect((await c.listPlaylists()).some((x) => x.id === pl.id)).toBe(false);
    });

    it('When artists are listed, then each artist of the kind comes back once', async () => {
      const artists = await client().listArtists();
      expect(new Set(artists.map((a) => a.name))).toEqual(k.artists.names(wesnoth));
      expect(new Set(artists.map((a) => a.id)).size).toBe(artists.length);
    });

    it('When history is asked, then played tracks come in the kind\'s order with last-played where it has one', async () => {
      const { fake } = pair();
      const history = await client().getListeningHistory(10);
      if (k.history.order === 'recent') {
        const expected = recentlyPlayed(wesnoth, 10);
        expect(history.map((t) => t.id)).toEqual(expected.map((t) => k.idOf(fake, t)));
        expect(history.map((t) => t.lastPlayed)).toEqual(expected.map((t) => t.lastPlayed));
      } else {
        expect(history.map((t) => t.id)).toEqual(mostPlayed(wesnoth, 10).map((t) => k.idOf(fake, t)));
        expect(history.every((t) => t.lastPlayed === undefined)).toBe(true);
      }
      k.history.check?.(fake);
    });

    it('When a track has lyrics, then they come back as plain text; otherwise undefined', async () => {
      const { fake } = pair();
      const withLyrics = wesnoth.update('wes-love-theme', { lyrics: 'First line of the song\nSecond line' });
      const c = client();
      await expect(c.getLyrics(k.idOf(fake, withLyrics))).resolves.toBe('First line of the song\nSecond line');
      await expect(c.getLyrics(k.idOf(fake, 'wes-battle'))).resolves.toBeUndefined();
    });

    k.extras?.(ctx);
  });
}
