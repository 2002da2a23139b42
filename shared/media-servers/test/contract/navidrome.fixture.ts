/**
 * Contract fixture of Navidrome / OpenSubsonic against the fake Navidrome (testkit): Subsonic
 * envelopes, token auth, HTTP-200 errors, whole-second durations, fake relative paths,
 * repeated-parameter playlist writes in batches of 40, OpenSubsonic API keys.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createFakeSubsonic, type FakeSubsonic, type FakeTrack } from '@polyphony/testkit';
import { BadCredentialsError } from '../../src/errors';
import { collectPages, tempDir } from '../helpers';
import type { KindFixture } from './kind';

export const navidromeFixture: KindFixture<FakeSubsonic> = {
  type: 'navidrome',
  title: 'NavidromeClient against the fake Navidrome',
  syntheticSize: 1234,
  make: (catalogue) => createFakeSubsonic({ catalogue }),
  creds: (_f, url) => ({ url, user: 'alice', password: 'sesame' }),
  badCreds: (_f, url) => ({ url, user: 'alice', password: 'nope' }),
  idOf: (f, t) => f.idOf(t as FakeTrack | string),
  bigIdAt: (f, i) => f.idOf(f.catalogue.trackAt(i)),
  connection: {
    clearFirst: true,
    serverName: 'navidrome',
    libraries: () => [
      { id: '1', name: 'Music' },
      { id: '2', name: 'Extras' },
    ],
    sampleTrackCount: 41,
    // Navidrome reports fake relative paths unless "Report real path" is on.
    pathsLookAbsolute: false,
    check: (f) => {
      expect(f.requests.length).toBeGreaterThan(0);
      for (const q of f.requests) {
        expect(q.query.p).toBeUndefined();
        const salt = String(q.query.s);
        expect(salt.length).toBeGreaterThanOrEqual(6);
        expect(q.query.t).toBe(createHash('md5').update(`sesame${salt}`).digest('hex'));
        expect(q.query.f).toBe('json');
      }
      expect(new Set(f.requests.map((q) => q.query.s)).size).toBe(f.requests.length);
    },
  },
  enumeration: {
    expectation: (f, t) => ({ path: f.fakePath(t), durationTolerance: 1, lastPlayed: true, albumArtist: true }),
    integerDurations: true,
  },
  paging: {
    // Without a filter every music folder is walked with its musicFolderId (issue 34): 620 + 614 synthetic songs.
    pages: 4,
    // Walk pages only (the one-song probes of each folder come first: songCount 1).
    pageMarks: (f) => f.requests.filter((q) => q.path === '/rest/search3.view' && q.query.songCount === '500').map((q) => `${q.query.musicFolderId}@${q.query.songOffset}`),
    expectedMarks: ['1@0', '1@500', '2@0', '2@500'],
    check: (f) => {
      const searches = f.requests.filter((q) => q.path === '/rest/search3.view');
      expect(searches.every((q) => q.query.query === '' && (q.query.songCount === '500' || q.query.songCount === '1'))).toBe(true);
    },
    fileStamps: true,
    libraryOf: (f, syn) => new Map(syn.libraries.flatMap((l) => syn.indicesIn([l.id]).map((i) => [f.idOf(syn.trackAt(i)), String(f.folderIdOf(l.id))] as [string, string]))),
  },
  filter: {
    musicLibraries: (f) => [String(f.folderIdOf('lib-syn-2'))],
    expectedIds: (f, syn) => syn.indicesIn(['lib-syn-2']).map((i) => f.idOf(syn.trackAt(i))),
  },
  // The two one-song folder probes (issue 34) are page requests of the fake: it fails on the walk's second page.
  failure: { yielded: 500, afterPages: 3 },
  download: { track: 'wes-northerners' },
  playlist: {
    name: 'Big mix',
    size: 250,
    idAt: (f, i, syn) => f.idOf(syn.trackAt((i * 11) % syn.size)),
    stored: (f) => f.playlists().map((p) => ({ id: p.id, trackIds: p.trackIds })),
    listsTrackCount: true,
    checkWrites: (f) => {
      const writes = f.requests.filter((q) => /^\/rest\/(create|update)Playlist\.view$/.test(q.path));
      expect(writes).toHaveLength(7);
      for (const w of writes) {
        const key = w.path.includes('create') ? 'songId' : 'songIdToAdd';
        const sent = ([] as string[]).concat(w.query[key] ?? []);
        expect(sent.length).toBeGreaterThan(0);
        expect(sent.length).toBeLessThanOrEqual(40);
      }
    },
  },
  artists: { names: (w) => new Set([...w].flatMap((t) => [t.artist, t.albumArtist])) },
  history: { order: 'recent' },
  extras: (ctx) => {
    afterEach(() => {
      ctx.pair().fake.enableDownloads = true;
    });

    it('When the server reports real paths, then pathsLookAbsolute is true', async () => {
      const real = createFakeSubsonic({ catalogue: ctx.wesnoth, reportRealPath: true });
      const s = await real.start();
      try {
        expect((await ctx.connect(real, s).testConnection()).pathsLookAbsolute).toBe(true);
      } finally {
        await s.close();
      }
    });

    it('When downloads are disabled (error 50), then the original comes from stream?format=raw', async () => {
      const { fake } = ctx.pair();
      fake.enableDownloads = false;
      fake.core.clearRequests();
      const { dir, cleanup } = await tempDir();
      try {
        const t = ctx.wesnoth.byId('wes-sad');
        if (!t) throw new Error('fixture missing');
        const dest = join(dir, 'song.ogg');
        await ctx.client().downloadTrack(fake.idOf(t), dest);
        expect((await readFile(dest)).equals(await readFile(t.audioFile))).toBe(true);
        expect(fake.requests.map((q) => q.path)).toEqual(['/rest/download.view', '/rest/stream.view']);
        expect(fake.requests[1]?.query.format).toBe('raw');
      } finally {
        await cleanup();
      }
    });

    describe('with an OpenSubsonic API key ({url, api_key})', () => {
      const keyed = () => createFakeSubsonic({ catalogue: ctx.wesnoth, apiKey: 'opensubsonic-key-42' });
      it('When the key is right, then every call sends apiKey and no u/t/s, and the catalogue, lyrics and playlists work', async () => {
        const f = keyed();
        const s = await f.start();
        try {
          const c = ctx.connect(f, s, { creds: { url: s.url, api_key: 'opensubsonic-key-42' } });
          const r = await c.testConnection();
          expect(r).toMatchObject({ ok: true, sampleTrackCount: 41 });
          const { items } = await collectPages(c.iterateTracks());
          expect(items).toHaveLength(41);
          const withLyrics = ctx.wesnoth.update('wes-love-theme', { lyrics: 'Keyed line one\nKeyed line two' });
          await expect(c.getLyrics(f.idOf(withLyrics))).resolves.toBe('Keyed line one\nKeyed line two');
          const ids = items.map((t) => t.id);
          const pl = await c.createPlaylist('Keyed mix', [...ids, ...ids.slice(0, 4)]);
          expect(f.playlists().find((p) => p.id === pl.id)?.trackIds).toHaveLength(45);
          await c.deletePlaylist(pl.id);
          expect(f.requests.length).toBeGreaterThan(0);
          for (const q of f.requests) {
            expect(q.query.apiKey).toBe('opensubsonic-key-42');
            expect([q.query.u, q.query.t, q.query.s, q.query.p]).toEqual([undefined, undefined, undefined, undefined]);
          }
        } finally {
          await s.close();
        }
      });

      it('When the key is wrong (error 44), then testConnection reports bad_credentials and the key never appears in the error', async () => {
        const f = keyed();
        const s = await f.start();
        try {
          const c = ctx.connect(f, s, { creds: { url: s.url, api_key: 'wrong-key-123' } });
          expect((await c.testConnection()).errorKind).toBe('bad_credentials');
          const err = (await c.listLibraries().catch((e: unknown) => e)) as Error;
          expect(err).toBeInstanceOf(BadCredentialsError);
          expect(err.message).not.toContain('wrong-key-123');
        } finally {
          await s.close();
        }
      });
    });
  },
};
