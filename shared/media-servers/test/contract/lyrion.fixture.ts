/**
 * Contract fixture of Lyrion Music Server against the fake LMS (testkit): JSON-RPC `slim.request`,
 * `file://` URLs, float durations, 0-100 ratings, path-prefix library filter, optional Basic auth,
 * closed sockets for bad commands, and both playlist-writing modes (connected player or
 * `playlists edit`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createFakeLyrion, type FakeLyrion, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import { BadCredentialsError, UnreachableError } from '../../src/errors';
import { collectPages, drainUntilError, expectTrack, tempDir } from '../helpers';
import type { KindFixture } from './kind';

const idOf = (f: FakeLyrion, t: FakeTrack | string): string => String(f.idOf(t));

export const lyrionFixture: KindFixture<FakeLyrion> = {
  type: 'lyrion',
  title: 'LyrionClient against the fake Lyrion Music Server',
  syntheticSize: 1234,
  make: (catalogue) => createFakeLyrion({ catalogue }),
  creds: (_f, url) => ({ url }),
  idOf,
  bigIdAt: (_f, i) => String(i + 1),
  connection: {
    version: () => '9.0.2',
    libraries: () => ['/srv/music/music', '/srv/music/extras'],
    sampleTrackCount: 41,
    pathsLookAbsolute: true,
    check: (f) => expect(f.commands()[0]?.cmd[0]).toBe('serverstatus'),
  },
  enumeration: { expectation: (_f, t) => ({ path: t.path, durationTolerance: 1e-6, lastPlayed: false, albumArtist: true }) },
  paging: {
    fileStamps: true,
    pages: 3,
    pageMarks: (f) => f.commands().filter((c) => c.cmd[0] === 'titles').map((c) => [c.cmd[1], c.cmd[2]]),
    expectedMarks: [
      [0, 500],
      [500, 500],
      [1000, 500],
    ],
  },
  filter: {
    musicLibraries: (_f, syn) => [syn.libraries[1]?.path ?? 'missing'],
    expectedIds: (_f, syn) => syn.indicesIn([syn.libraries[1]?.id ?? 'missing']).map((i) => String(i + 1)),
    check: (items, syn) => expect(items.every((t) => t.path?.startsWith(`${syn.libraries[1]?.path}/`))).toBe(true),
  },
  failure: { yielded: 500 },
  download: { track: 'wes-journeys-end' },
  playlist: {
    name: 'Edit mix',
    size: 120,
    idAt: (_f, i, syn) => String(((i * 7) % syn.size) + 1),
    stored: (f) => f.playlists().map((p) => ({ id: String(p.id), trackIds: p.trackIds.map(String) })),
    listsTrackCount: false,
    checkWrites: (f) => {
      // No player connected: one url per `playlists edit`.
      const edits = f.commands().filter((x) => x.cmd[0] === 'playlists' && x.cmd[1] === 'edit');
      expect(edits).toHaveLength(120);
      expect(edits.every((x) => x.cmd.filter((w) => String(w).startsWith('url:')).length === 1)).toBe(true);
    },
  },
  artists: { names: (w) => new Set([...w].flatMap((t) => [t.artist, t.albumArtist])) },
  history: {
    order: 'most_played',
    check: (f) => expect(f.commands().filter((x) => x.cmd.some((w) => String(w).startsWith('sort:sql='))).length).toBeGreaterThan(0),
  },
  extras: (ctx) => {
    afterEach(() => {
      ctx.pair().bigFake.players = [];
    });

    describe('with password protection on', () => {
      let guarded: FakeLyrion;
      let guardedServer: StartedFake;
      beforeAll(async () => {
        guarded = createFakeLyrion({ catalogue: ctx.wesnoth, user: 'admin', password: 'hunter2' });
        guardedServer = await guarded.start();
      });
      afterAll(() => guardedServer.close());

      it('When the Basic credentials are right, then calls succeed', async () => {
        const libs = await ctx.client({ creds: { url: guardedServer.url, user: 'admin', password: 'hunter2' } }).listLibraries();
        expect(libs).toHaveLength(2);
      });

      it('When the Basic credentials are wrong or missing, then 401 becomes bad_credentials', async () => {
        const r = await ctx.client({ creds: { url: guardedServer.url, user: 'admin', password: 'wrong' } }).testConnection();
        expect(r.ok).toBe(false);
        expect(r.errorKind).toBe('bad_credentials');
        await expect(ctx.client({ creds: { url: guardedServer.url } }).listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
      });

      it('When a track is downloaded, then Basic auth is sent there too', async () => {
        const { dir, cleanup } = await tempDir();
        try {
          const t = ctx.wesnoth.byId('wes-defeat');
          if (!t) throw new Error('fixture missing');
          await ctx.client({ creds: { url: guardedServer.url, user: 'admin', password: 'hunter2' } }).downloadTrack(idOf(guarded, t), join(dir, 'x.ogg'));
          expect((await readFile(join(dir, 'x.ogg'))).equals(await readFile(t.audioFile))).toBe(true);
        } finally {
          await cleanup();
        }
      });
    });

    it('When LMS sends numbers as strings, then the enumeration is the same', async () => {
      const stringy = createFakeLyrion({ catalogue: ctx.wesnoth, stringNumbers: true });
      const s = await stringy.start();
      try {
        const { items } = await collectPages(ctx.connect(stringy, s).iterateTracks());
        const byId = new Map(items.map((t) => [t.id, t]));
        for (const t of ctx.wesnoth) {
          expectTrack(byId.get(idOf(stringy, t)), t, { path: t.path, durationTolerance: 1e-6, lastPlayed: false, albumArtist: true });
        }
      } finally {
        await s.close();
      }
    });

    it('When LMS drops the connection mid-enumeration, then the iteration throws', async () => {
      const { bigFake } = ctx.pair();
      bigFake.failMode = 'close';
      bigFake.failAfterPages(2);
      try {
        const second = await drainUntilError(ctx.bigClient().iterateTracks());
        expect(second.yielded).toBe(1000);
        expect(second.error).toBeInstanceOf(UnreachableError);
      } finally {
        bigFake.failMode = 'status500';
      }
    });

    it('When a player is connected but the default mode is used, then the player queue is left alone', async () => {
      const { bigFake } = ctx.pair();
      bigFake.players = [{ playerid: 'aa:bb:cc:dd:ee:ff', name: 'Kitchen' }];
      bigFake.core.clearRequests();
      const ids = Array.from({ length: 60 }, (_, i) => String(i + 1));
      const c = ctx.bigClient();
      const pl = await c.createPlaylist('Default mix', ids);
      expect(bigFake.playlists().find((p) => String(p.id) === pl.id)?.trackIds.map(String)).toEqual(ids);
      expect(bigFake.commands().some((x) => x.player !== '' || x.cmd[0] === 'playlistcontrol')).toBe(false);
      expect(bigFake.queueOf('aa:bb:cc:dd:ee:ff')).toEqual([]);
      await c.deletePlaylist(pl.id);
    });

    it('When player mode is chosen and a player is connected, then tracks go through playlistcontrol in batches of at most 50 and are saved', async () => {
      const { bigFake } = ctx.pair();
      bigFake.players = [{ playerid: 'aa:bb:cc:dd:ee:ff', name: 'Kitchen' }];
      bigFake.core.clearRequests();
      const ids = Array.from({ length: 230 }, (_, i) => String(((i * 11) % ctx.synthetic.size) + 1));
      const c = ctx.bigClient({}, { lyrionPlaylistMode: 'player' });
      const pl = await c.createPlaylist('Player mix', ids);
      const stored = bigFake.playlists().find((p) => String(p.id) === pl.id);
      expect(stored?.name).toBe('Player mix');
      expect(stored?.trackIds.map(String)).toEqual(ids);
      const adds = bigFake.commands().filter((x) => x.cmd[0] === 'playlistcontrol' && x.cmd[1] === 'cmd:add');
      expect(adds).toHaveLength(5);
      for (const a of adds) {
        expect(a.player).toBe('aa:bb:cc:dd:ee:ff');
        const n = String(a.cmd.find((w) => String(w).startsWith('track_id:'))).slice('track_id:'.length).split(',').length;
        expect(n).toBeLessThanOrEqual(50);
      }
      expect(bigFake.playlists().filter((p) => p.name === 'Player mix')).toHaveLength(1);
      await c.deletePlaylist(pl.id);
      expect(bigFake.playlists()).toHaveLength(0);
    });
  },
};
