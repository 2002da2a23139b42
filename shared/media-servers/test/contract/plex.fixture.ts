/**
 * Contract fixture of Plex Media Server against the fake PMS (testkit): MediaContainer JSON,
 * container paging, ms durations, epoch times, `server://` playlist URIs in batches of 100, lyric
 * streams; and the PIN linking helpers against the fake plex.tv.
 */
import { createFakePlex, createFakePlexTv, type FakePlex, type FakePlexTv, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import { NotFoundError } from '../../src/errors';
import { checkPin, createPin } from '../../src/plex-pin';
import { collectPages } from '../helpers';
import type { KindFixture } from './kind';

export const plexFixture: KindFixture<FakePlex> = {
  type: 'plex',
  title: 'PlexClient against the fake Plex Media Server',
  syntheticSize: 2345,
  make: (catalogue) => createFakePlex({ catalogue }),
  creds: (f, url) => ({ url, token: f.token }),
  badCreds: (_f, url) => ({ url, token: 'wrong' }),
  idOf: (f, t) => f.idOf(t as FakeTrack | string),
  bigIdAt: (f, i) => f.idOf(f.catalogue.trackAt(i)),
  connection: {
    clearFirst: true,
    version: (f) => f.version,
    libraries: () => [
      { id: '1', name: 'Music', path: '/srv/music/music' },
      { id: '2', name: 'Extras', path: '/srv/music/extras' },
    ],
    sampleTrackCount: 39,
    pathsLookAbsolute: true,
    check: (f) => {
      const authed = f.requests.filter((q) => q.path !== '/identity');
      expect(authed.every((q) => q.headers['x-plex-token'] === f.token && String(q.headers.accept).includes('application/json'))).toBe(true);
    },
  },
  // duration is whole milliseconds on Plex
  enumeration: { expectation: (_f, t) => ({ path: t.path, durationTolerance: 0.0005 + 1e-9, lastPlayed: true, albumArtist: true }) },
  paging: {
    musicLibraries: (f) => [f.sectionKeyOf('lib-syn-1')],
    expectedIds: (f, syn) => syn.indicesIn(['lib-syn-1']).map((i) => f.idOf(syn.trackAt(i))),
    pages: 2,
    pageMarks: (f) => f.requests.filter((q) => q.path === '/library/sections/1/all').map((q) => q.headers['x-plex-container-start']),
    expectedMarks: ['0', '1000'],
    check: (f) => {
      const listings = f.requests.filter((q) => q.path === '/library/sections/1/all');
      expect(listings.every((q) => q.headers['x-plex-container-size'] === '1000' && q.query.type === '10')).toBe(true);
    },
    fileStamps: true,
    libraryOf: (f, syn) => new Map(syn.indicesIn(['lib-syn-1']).map((i) => [f.idOf(syn.trackAt(i)), f.sectionKeyOf('lib-syn-1')] as [string, string])),
  },
  failure: { musicLibraries: ['1'], yielded: 1000 },
  download: {
    track: 'wes-vengeful',
    check: (f) => expect(f.requests.find((q) => q.path.startsWith('/library/parts/'))?.query.download).toBe('1'),
  },
  playlist: {
    name: 'Big mix',
    size: 250,
    idAt: (f, i, syn) => f.idOf(syn.trackAt((i * 13) % syn.size)),
    stored: (f) => f.playlists().map((p) => ({ id: p.id, trackIds: p.trackIds })),
    listsTrackCount: true,
    checkWrites: (f) => {
      const writes = f.requests.filter((q) => q.path === '/playlists' && q.method === 'POST').concat(f.requests.filter((q) => q.method === 'PUT'));
      expect(writes).toHaveLength(3);
      for (const w of writes) {
        const uri = String(w.query.uri);
        expect(uri.startsWith(`server://${f.machineIdentifier}/com.plexapp.plugins.library/library/metadata/`)).toBe(true);
        expect(uri.slice(uri.lastIndexOf('/') + 1).split(',').length).toBeLessThanOrEqual(100);
      }
    },
  },
  artists: { names: (w) => new Set([...w].map((t) => t.albumArtist)) },
  history: { order: 'recent' },
  extras: (ctx) => {
    it('When no section filter is set, then every music section is enumerated and the movie section is skipped', async () => {
      const { bigFake } = ctx.pair();
      bigFake.core.clearRequests();
      const { items } = await collectPages(ctx.bigClient().iterateTracks());
      expect(items).toHaveLength(2345);
      expect(new Set(items.map((t) => t.id)).size).toBe(2345);
      expect(bigFake.requests.some((q) => q.path === `/library/sections/${bigFake.movieSectionKey}/all`)).toBe(false);
    });

    describe('Plex PIN linking against the fake plex.tv', () => {
      let tv: FakePlexTv;
      let server: StartedFake;
      beforeAll(async () => {
        tv = createFakePlexTv({ accountToken: 'account-token-123' });
        server = await tv.start();
      });
      afterAll(() => server.close());

      it('When the PIN is created and later approved, then polling returns the token only after approval', async () => {
        const pin = await createPin('client-abc', server.url);
        expect(pin.code).toMatch(/^[A-Z0-9]{4}$/);
        expect(pin.linkUrl).toBe(`${server.url}/link`);
        expect(pin.expiresIn).toBe(900);
        const created = tv.requests.find((q) => q.method === 'POST');
        expect(created?.status).toBe(201);
        expect(created?.headers['x-plex-client-identifier']).toBe('client-abc');

        await expect(checkPin(pin.id, 'client-abc', server.url)).resolves.toEqual({ expiresAt: expect.any(String) });
        tv.approve(Number(pin.id));
        const linked = await checkPin(pin.id, 'client-abc', server.url);
        expect(linked.token).toBe('account-token-123');
      });

      it('When another client identifier polls, then plex.tv does not know the PIN', async () => {
        const pin = await createPin('client-one', server.url);
        await expect(checkPin(pin.id, 'client-two', server.url, { retries: 0 })).rejects.toBeInstanceOf(NotFoundError);
      });
    });
  },
};
