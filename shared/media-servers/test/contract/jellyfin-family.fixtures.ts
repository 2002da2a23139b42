/**
 * Contract fixtures of the two MediaBrowser kinds (Jellyfin 10.x/12.x and Emby 4.8): the same DTOs
 * with different auth, id shapes, URL prefix and playlist calls (media-server-apis.md §2-3).
 */
import { createFakeEmby, createFakeJellyfin, type FakeEmby, type FakeJellyfin, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import { BadCredentialsError } from '../../src/errors';
import { signInWithPassword } from '../../src/signin';
import { TEST_CLIENT_OPTIONS } from '../helpers';
import type { KindContext, KindFixture } from './kind';

type MbFake = FakeJellyfin | FakeEmby;

/** The parts both MediaBrowser fixtures share; `prefix` is '' (Jellyfin) or '/emby'. */
function mediaBrowserFixture(kind: 'jellyfin' | 'emby'): Omit<KindFixture<MbFake>, 'connection' | 'enumeration' | 'playlist' | 'artists' | 'extras' | 'title'> {
  const itemsPath = (f: MbFake): string => (kind === 'jellyfin' ? '/Items' : `/emby/Users/${f.userId}/Items`);
  return {
    type: kind,
    syntheticSize: 1234,
    make: (catalogue) => (kind === 'jellyfin' ? createFakeJellyfin({ catalogue }) : createFakeEmby({ catalogue })),
    creds: (f, url) => ({ url, user_id: f.userId, token: f.token }),
    badCreds: (f, url) => ({ url, user_id: f.userId, token: 'wrong-token' }),
    idOf: (f, t) => f.idOf(t as FakeTrack | string),
    bigIdAt: (f, i) => f.trackId(i),
    paging: {
      // Without a filter each music library is paged with its ParentId (issue 34): 620 + 614 synthetic songs.
      pages: 4,
      pageMarks: (f) => f.requests.filter((q) => q.path === itemsPath(f)).map((q) => `${q.query.ParentId === f.viewIdOf('lib-syn-1') ? 1 : 2}@${q.query.StartIndex}`),
      expectedMarks: ['1@0', '1@500', '2@0', '2@500'],
      fileStamps: true,
      libraryOf: (f, syn) => new Map(syn.libraries.flatMap((l) => syn.indicesIn([l.id]).map((i) => [f.trackId(i), f.viewIdOf(l.id)] as [string, string]))),
    },
    filter: {
      musicLibraries: (f) => [f.viewIdOf('lib-syn-2')],
      expectedIds: (f, syn) => syn.indicesIn(['lib-syn-2']).map((i) => f.trackId(i)),
      check: (items) => expect(items.length).toBeGreaterThan(500),
    },
    failure: { yielded: 500 },
    download: { track: 'wes-knolls' },
    history: { order: 'recent' },
  } satisfies Partial<KindFixture<MbFake>> & { paging: unknown };
}

/** Libraries both fakes serve (Movies is dropped by the client). */
const libraries = (f: MbFake) => [
  { id: f.viewIdOf('lib-music'), name: 'Music', path: '/srv/music/music' },
  { id: f.viewIdOf('lib-extras'), name: 'Extras', path: '/srv/music/extras' },
];

/** Connection expectations of both fakes: both music libraries, 41 sample tracks, absolute paths. */
function mediaBrowserConnection(serverName: string, version: string, check: (f: MbFake) => void): KindFixture<MbFake>['connection'] {
  return { serverName, version: () => version, libraries, sampleTrackCount: 41, pathsLookAbsolute: true, check };
}

/** Ticks are exact seconds after conversion; user data carries last-played; ids have the kind's shape. */
function mediaBrowserEnumeration(idPattern: RegExp): KindFixture<MbFake>['enumeration'] {
  return { expectation: (_f, t) => ({ path: t.path, durationTolerance: 1e-6, lastPlayed: true, albumArtist: true }), idPattern };
}

/** 250 ids written to the big fake in batches of at most 100 (media-server-apis.md §2.8), listed with ChildCount. */
function mediaBrowserPlaylist(checkWrites: (f: MbFake) => void): KindFixture<MbFake>['playlist'] {
  return {
    name: 'Big mix',
    size: 250,
    idAt: (f, i, syn) => f.trackId((i * 7) % syn.size),
    stored: (f) => f.playlists().map((p) => ({ id: p.id, trackIds: p.trackIds })),
    listsTrackCount: true,
    checkWrites,
  };
}

/** Registers the tests both MediaBrowser kinds have beyond the contract. */
function mediaBrowserExtras(kind: 'jellyfin' | 'emby', ctx: KindContext<MbFake>): void {
  it('When the user is not an admin, then libraries come from the user views', async () => {
    const nonAdmin = kind === 'jellyfin' ? createFakeJellyfin({ catalogue: ctx.wesnoth, admin: false }) : createFakeEmby({ catalogue: ctx.wesnoth, admin: false });
    const s: StartedFake = await nonAdmin.start();
    try {
      const libs = await ctx.connect(nonAdmin, s).listLibraries();
      expect(libs.map((l) => l.id)).toEqual([nonAdmin.viewIdOf('lib-music'), nonAdmin.viewIdOf('lib-extras')]);
      expect(nonAdmin.requests.find((q) => q.path === `${kind === 'emby' ? '/emby' : ''}/Library/VirtualFolders`)?.status).toBe(403);
    } finally {
      await s.close();
    }
  });

  it('When a user signs in with name and password, then the token and user id come back; a wrong password is BadCredentialsError without the password in it', async () => {
    const { fake, server } = ctx.pair();
    const ok = await signInWithPassword(kind, server.url, fake.userName, 'secret', TEST_CLIENT_OPTIONS);
    expect(ok).toMatchObject({ token: fake.token, userId: fake.userId });
    const err = (await signInWithPassword(kind, server.url, fake.userName, 'not-the-password-123', TEST_CLIENT_OPTIONS).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(BadCredentialsError);
    expect(err.message).not.toContain('not-the-password-123');
    const login = fake.requests.filter((q) => q.path.endsWith('/Users/AuthenticateByName'));
    expect(login.map((q) => q.path)).toEqual([`${kind === 'emby' ? '/emby' : ''}/Users/AuthenticateByName`, `${kind === 'emby' ? '/emby' : ''}/Users/AuthenticateByName`]);
    const header = kind === 'emby' ? login[0]?.headers['x-emby-authorization'] : login[0]?.headers.authorization;
    expect(String(header)).toMatch(kind === 'emby' ? /^Emby .*Client="polyphony"/ : /^MediaBrowser .*Client="polyphony"/);
  });
}

export const jellyfinFixture: KindFixture<MbFake> = {
  ...mediaBrowserFixture('jellyfin'),
  title: 'JellyfinClient against the fake Jellyfin',
  connection: mediaBrowserConnection('Fake Jellyfin', '10.10.7', (f) => {
    const authHeaders = f.requests.filter((q) => q.path === '/Items').map((q) => String(q.headers.authorization));
    expect(authHeaders.length).toBeGreaterThan(0);
    expect(authHeaders.every((h) => h.startsWith('MediaBrowser ') && h.includes(`Token="${f.token}"`))).toBe(true);
  }),
  enumeration: mediaBrowserEnumeration(/^[0-9a-f]{32}$/),
  playlist: mediaBrowserPlaylist((f) => {
    const writes = f.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/Playlists'));
    expect(writes).toHaveLength(3);
    for (const w of writes) {
      const sent = w.path === '/Playlists' ? (w.body as { Ids: string[] }).Ids.length : String(w.query.ids).split(',').length;
      expect(sent).toBeLessThanOrEqual(100);
      expect(w.status).toBeLessThan(300);
    }
  }),
  artists: { names: (w) => new Set([...w].flatMap((t) => [t.artist, t.albumArtist])) },
  extras: (ctx) => mediaBrowserExtras('jellyfin', ctx),
};

export const embyFixture: KindFixture<MbFake> = {
  ...mediaBrowserFixture('emby'),
  title: 'EmbyClient against the fake Emby',
  connection: mediaBrowserConnection('Fake Emby', '4.8.11.0', (f) => {
    const itemQueries = f.requests.filter((q) => q.path === `/emby/Users/${f.userId}/Items`);
    expect(itemQueries.length).toBeGreaterThan(0);
    expect(itemQueries.every((q) => q.headers['x-emby-token'] === f.token)).toBe(true);
  }),
  enumeration: mediaBrowserEnumeration(/^\d+$/),
  playlist: mediaBrowserPlaylist((f) => {
    const writes = f.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/emby/Playlists'));
    expect(writes).toHaveLength(3);
    for (const w of writes) {
      expect(String(w.query.Ids).split(',').length).toBeLessThanOrEqual(100);
      expect(w.status).toBeLessThan(300);
    }
  }),
  artists: { names: (w) => new Set([...w].map((t) => t.albumArtist)) },
  extras: (ctx) => {
    mediaBrowserExtras('emby', ctx);
    it('When the URL already ends in /emby, then the client still reaches the server', async () => {
      const { fake, server } = ctx.pair();
      const libs = await ctx.client({ creds: { url: `${server.url}/emby`, user_id: fake.userId, token: fake.token } }).listLibraries();
      expect(libs).toHaveLength(2);
    });
  },
};
