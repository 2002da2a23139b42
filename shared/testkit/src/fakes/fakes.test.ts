/**
 * Protocol-level checks of the fake media servers against media-server-apis.md (§2-§6 and the
 * §8 checklist), independent of the provider clients. Uses a small synthetic catalogue whose
 * "audio" is a temp file, so no external package is needed.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { syntheticCatalogue, type SyntheticCatalogue } from './catalogue';
import { createFakeEmby } from './emby';
import { createFakeJellyfin } from './jellyfin';
import { createFakeLyrion, fileUrl } from './lyrion';
import { createFakePlex } from './plex';
import { createFakePlexTv } from './plextv';
import { createFakeSubsonic } from './subsonic';

let dir: string;
let audio: string;
let cat: SyntheticCatalogue;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fakes-'));
  audio = join(dir, 'tone.ogg');
  writeFileSync(audio, Buffer.from('OggS fake audio bytes for download tests'));
  cat = syntheticCatalogue(30, { audioFile: audio, lyricsEvery: 0 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every key whose value is null, anywhere in a JSON value. */
function nullKeys(v: unknown, path = ''): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => nullKeys(x, `${path}[${i}]`));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => (x === null ? [`${path}.${k}`] : nullKeys(x, `${path}.${k}`)));
  return [];
}

describe('fake Jellyfin', () => {
  const auth = (token: string) => ({ Authorization: `MediaBrowser Client="t", Token="${encodeURIComponent(token)}"` });

  it('When no or a wrong token is sent, then 401; the public info needs none', async () => {
    const f = createFakeJellyfin({ catalogue: cat });
    await request(f.app).get('/Items').expect(401);
    await request(f.app).get('/Items').set(auth('nope')).expect(401);
    const info = await request(f.app).get('/System/Info/Public').expect(200);
    expect(info.body.ProductName).toBe('Jellyfin Server');
  });

  it('When a token has URL-encoded characters or comes as ApiKey (any case), then it is accepted', async () => {
    const f = createFakeJellyfin({ catalogue: cat, token: 'a b/c' });
    await request(f.app).get('/Items').set(auth('a b/c')).expect(200);
    await request(f.app).get('/Items').query({ apikey: 'a b/c' }).expect(200);
  });

  it('When legacy X-Emby-Token is used, then it is refused unless legacyAuth is on (Jellyfin 12 default)', async () => {
    const strict = createFakeJellyfin({ catalogue: cat });
    await request(strict.app).get('/Items').set('X-Emby-Token', strict.token).expect(401);
    await request(strict.app).get('/Items').query({ api_key: strict.token }).expect(401);
    const legacy = createFakeJellyfin({ catalogue: cat, legacyAuth: true });
    await request(legacy.app).get('/Items').set('X-Emby-Token', legacy.token).expect(200);
  });

  it('When Fields lacks Path, then Path is absent; RunTimeTicks is 100 ns; nulls are left out', async () => {
    const f = createFakeJellyfin({ catalogue: cat });
    const q = { IncludeItemTypes: 'Audio', Recursive: 'true', Limit: '5' };
    const plain = await request(f.app).get('/Items').set(auth(f.token)).query(q).expect(200);
    expect(plain.body.Items).toHaveLength(5);
    expect(plain.body.TotalRecordCount).toBe(30);
    expect(plain.body.StartIndex).toBe(0);
    expect(plain.body.Items.every((i: Record<string, unknown>) => !('Path' in i))).toBe(true);
    expect(nullKeys(plain.body)).toEqual([]);
    const t0 = cat.trackAt(0);
    expect(plain.body.Items[0].RunTimeTicks).toBe(Math.round(t0.durationSeconds * 10_000_000));
    expect(plain.body.Items[0].Id).toMatch(/^[0-9a-f]{32}$/);
    const withPath = await request(f.app).get('/Items').set(auth(f.token)).query({ ...q, fields: 'path' }).expect(200);
    expect(withPath.body.Items[0].Path).toBe(t0.path);
  });

  it('When a view is queried without Recursive, then no Audio comes back (tracks sit below folders)', async () => {
    const f = createFakeJellyfin({ catalogue: cat });
    const view = f.viewIdOf('lib-syn-1');
    const flat = await request(f.app).get('/Items').set(auth(f.token)).query({ IncludeItemTypes: 'Audio', ParentId: view }).expect(200);
    expect(flat.body.Items).toHaveLength(0);
    const deep = await request(f.app).get('/Items').set(auth(f.token)).query({ IncludeItemTypes: 'Audio', ParentId: view, Recursive: 'true' }).expect(200);
    expect(deep.body.TotalRecordCount).toBe(cat.indicesIn(['lib-syn-1']).length);
  });

  it('When a playlist request carries too many ids or an over-long request line, then 400 / 414', async () => {
    const f = createFakeJellyfin({ catalogue: cat, maxIdsPerRequest: 3 });
    const ids = [0, 1, 2, 3].map((i) => f.trackId(i));
    await request(f.app).post('/Playlists').set(auth(f.token)).send({ Name: 'x', Ids: ids, UserId: f.userId }).expect(400);
    const ok = await request(f.app).post('/Playlists').set(auth(f.token)).send({ Name: 'x', Ids: ids.slice(0, 3), UserId: f.userId }).expect(200);
    expect(f.playlists()[0]?.trackIds).toEqual(ids.slice(0, 3));
    await request(f.app).post(`/Playlists/${ok.body.Id}/Items`).set(auth(f.token)).query({ ids: 'x'.repeat(9000) }).expect(414);
  });

  it('When the user may not delete, then DELETE /Items/{id} answers 401 (Jellyfin quirk) and keeps the playlist', async () => {
    const f = createFakeJellyfin({ catalogue: cat, canDelete: false });
    const created = await request(f.app).post('/Playlists').set(auth(f.token)).send({ Name: 'keep', Ids: [f.trackId(0)] }).expect(200);
    await request(f.app).delete(`/Items/${created.body.Id}`).set(auth(f.token)).expect(401);
    expect(f.playlists()).toHaveLength(1);
  });

  it('When the download policy is off, then /Download is 403 but /File still serves the bytes', async () => {
    const f = createFakeJellyfin({ catalogue: cat, allowDownload: false });
    await request(f.app).get(`/Items/${f.trackId(0)}/Download`).set(auth(f.token)).expect(403);
    const file = await request(f.app).get(`/Items/${f.trackId(0)}/File`).set(auth(f.token)).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(file.status).toBe(200);
    expect((file.body as Buffer).toString()).toBe('OggS fake audio bytes for download tests');
  });
});

describe('fake Emby', () => {
  it('When served under /emby, then X-Emby-Token and api_key work and results have no StartIndex', async () => {
    const f = createFakeEmby({ catalogue: cat });
    const res = await request(f.app).get(`/emby/Users/${f.userId}/Items`).set('X-Emby-Token', f.token).query({ IncludeItemTypes: 'Audio', Recursive: 'true', Limit: '2' }).expect(200);
    expect(res.body.Items).toHaveLength(2);
    expect('StartIndex' in res.body).toBe(false);
    expect(res.body.Items[0].Id).toMatch(/^\d+$/);
    await request(f.app).get('/emby/Items').query({ api_key: f.token }).expect(200);
    await request(f.app).get('/emby/Items').expect(401);
  });

  it('When the public info is read, then it has LocalAddresses and no ProductName', async () => {
    const f = createFakeEmby({ catalogue: cat });
    const info = await request(f.app).get('/emby/System/Info/Public').expect(200);
    expect(info.body.LocalAddresses).toEqual([]);
    expect('ProductName' in info.body).toBe(false);
  });

  it('When virtual folders are read, then both the bare array and the documented /Query form exist', async () => {
    const f = createFakeEmby({ catalogue: cat });
    const bare = await request(f.app).get('/emby/Library/VirtualFolders').set('X-Emby-Token', f.token).expect(200);
    const wrapped = await request(f.app).get('/emby/Library/VirtualFolders/Query').set('X-Emby-Token', f.token).expect(200);
    expect(Array.isArray(bare.body)).toBe(true);
    expect(wrapped.body.Items).toEqual(bare.body);
    expect(wrapped.body.TotalRecordCount).toBe(bare.body.length);
  });

  it('When a playlist is created with query parameters, then a JSON body alone is not enough', async () => {
    const f = createFakeEmby({ catalogue: cat });
    await request(f.app).post('/emby/Playlists').set('X-Emby-Token', f.token).send({ Name: 'x', Ids: [f.trackId(0)] }).expect(400);
    const ok = await request(f.app).post('/emby/Playlists').set('X-Emby-Token', f.token).query({ Name: 'x', Ids: `${f.trackId(0)},${f.trackId(1)}`, MediaType: 'Audio' }).expect(200);
    expect(ok.body.ItemAddedCount).toBe(2);
    await request(f.app).post('/emby/Items/Delete').set('X-Emby-Token', f.token).query({ Ids: ok.body.Id }).expect(204);
    expect(f.playlists()).toHaveLength(0);
  });
});

describe('fake Subsonic (Navidrome flavour)', () => {
  const base = { u: 'alice', v: '1.16.1', c: 'test', f: 'json' };

  it('When the worked example of the API docs is sent (sesame / c19b2d), then the token is accepted', async () => {
    const f = createFakeSubsonic({ catalogue: cat, password: 'sesame' });
    const res = await request(f.app).get('/rest/ping.view').query({ ...base, s: 'c19b2d', t: '26719a1196d2a940705a59634eb18eab' }).expect(200);
    expect(res.body['subsonic-response'].status).toBe('ok');
    expect(res.body['subsonic-response'].openSubsonic).toBe(true);
  });

  it('When credentials are wrong or missing, then HTTP 200 with status failed and code 40 / 10', async () => {
    const f = createFakeSubsonic({ catalogue: cat });
    const wrong = await request(f.app).get('/rest/ping').query({ ...base, p: 'nope' }).expect(200);
    expect(wrong.body['subsonic-response']).toMatchObject({ status: 'failed', error: { code: 40 } });
    const noClient = await request(f.app).get('/rest/ping').query({ u: 'alice', v: '1.16.1', f: 'json', p: 'sesame' }).expect(200);
    expect(noClient.body['subsonic-response'].error.code).toBe(10);
    const enc = await request(f.app).get('/rest/ping').query({ ...base, p: `enc:${Buffer.from('sesame').toString('hex')}` }).expect(200);
    expect(enc.body['subsonic-response'].status).toBe('ok');
  });

  it('When f is not json, then the answer is Subsonic XML', async () => {
    const f = createFakeSubsonic({ catalogue: cat });
    const salt = 'abcdef';
    const res = await request(f.app).get('/rest/getMusicFolders.view').query({ u: 'alice', v: '1.16.1', c: 't', s: salt, t: createHash('md5').update(`sesame${salt}`).digest('hex') }).expect(200);
    expect(res.type).toBe('application/xml');
    expect(res.text).toContain('<subsonic-response xmlns="http://subsonic.org/restapi" status="ok"');
    expect(res.text).toContain('<musicFolder id="1" name="Synthetic 1"/>');
  });

  it('When songs are listed, then zero values are left out, played appears only with plays, folder ids are ints', async () => {
    const f = createFakeSubsonic({ catalogue: cat });
    const folders = await request(f.app).get('/rest/getMusicFolders').query({ ...base, p: 'sesame' });
    expect(typeof folders.body['subsonic-response'].musicFolders.musicFolder[0].id).toBe('number');
    const res = await request(f.app).get('/rest/search3').query({ ...base, p: 'sesame', query: '""', songCount: 100, artistCount: 0, albumCount: 0 }).expect(200);
    const songs = res.body['subsonic-response'].searchResult3.song as Array<Record<string, unknown>>;
    expect(songs).toHaveLength(30);
    for (const s of songs) {
      const t = f.trackFor(String(s.id));
      expect(t).toBeDefined();
      expect(s.duration).toBe(Math.trunc(t?.durationSeconds ?? -1));
      expect('albumArtist' in s).toBe(false);
      if (t?.playCount === 0) {
        expect('playCount' in s).toBe(false);
        expect('played' in s).toBe(false);
      } else {
        expect(s.played).toBe(t?.lastPlayed);
      }
      expect(String(s.path).startsWith('/')).toBe(false);
    }
  });

  it('When another user was given some libraries, then their folders, their songs and code 70 for the others (Navidrome multi-library)', async () => {
    const [first, second] = cat.libraries;
    const f = createFakeSubsonic({ catalogue: cat, accounts: [{ user: 'bob', password: 'bob-pw', libraries: [second!.id] }] });
    const bob = { ...base, u: 'bob', p: 'bob-pw' };
    const folders = (await request(f.app).get('/rest/getMusicFolders').query(bob).expect(200)).body['subsonic-response'].musicFolders.musicFolder;
    expect(folders).toEqual([{ id: 2, name: second!.name }]);
    const songsOf = async (q: Record<string, unknown>) =>
      ((await request(f.app).get('/rest/search3').query({ query: '', songCount: 500, artistCount: 0, albumCount: 0, ...q }).expect(200)).body['subsonic-response'].searchResult3.song ?? []) as Array<{ id: string }>;
    const his = await songsOf(bob);
    expect(his.length).toBe(cat.indicesIn([second!.id]).length);
    expect(his.every((s) => f.trackFor(s.id)?.library === second!.id)).toBe(true);
    const denied = await request(f.app).get('/rest/search3').query({ ...bob, query: '', musicFolderId: 1 }).expect(200);
    expect(denied.body['subsonic-response']).toMatchObject({ status: 'failed', error: { code: 70 } });
    expect(await request(f.app).get('/rest/ping').query({ ...base, u: 'bob', p: 'sesame' }).then((r) => r.body['subsonic-response'].error.code)).toBe(40);
    // The main user still sees every library.
    expect((await songsOf({ ...base, p: 'sesame' })).length).toBe(cat.size);
    expect(first).toBeDefined();
  });

  it('When a playlist request carries more songs than the batch limit, then it fails with a Subsonic error', async () => {
    const f = createFakeSubsonic({ catalogue: cat, maxIdsPerRequest: 2 });
    const ids = [0, 1, 2].map((i) => f.idOf(cat.trackAt(i)));
    const tooMany = await request(f.app).get(`/rest/createPlaylist?${new URLSearchParams([...Object.entries({ ...base, p: 'sesame', name: 'x' }), ...ids.map((id) => ['songId', id] as [string, string])])}`).expect(200);
    expect(tooMany.body['subsonic-response'].status).toBe('failed');
    const ok = await request(f.app).post('/rest/createPlaylist').type('form').send(new URLSearchParams([...Object.entries({ ...base, p: 'sesame', name: 'x' }), ...ids.slice(0, 2).map((id) => ['songId', id] as [string, string])]).toString()).expect(200);
    expect(ok.body['subsonic-response'].playlist.entry).toHaveLength(2);
  });

  it('When an unknown or removed method is called, then 404 / 410 plain text; extensions need no auth', async () => {
    const f = createFakeSubsonic({ catalogue: cat });
    await request(f.app).get('/rest/doesNotExist').query({ ...base, p: 'sesame' }).expect(404);
    await request(f.app).get('/rest/search').query({ ...base, p: 'sesame' }).expect(410);
    const ext = await request(f.app).get('/rest/getOpenSubsonicExtensions').query({ f: 'json' }).expect(200);
    expect(ext.body['subsonic-response'].openSubsonicExtensions.map((e: { name: string }) => e.name)).toContain('songLyrics');
  });
});

describe('fake Lyrion', () => {
  const rpc = (cmd: unknown[], player = '') => ({ id: 7, method: 'slim.request', params: [player, cmd] });

  it('When a query is sent, then id/method/params are echoed and tags decide the keys', async () => {
    const f = createFakeLyrion({ catalogue: cat });
    const res = await request(f.app).post('/jsonrpc.js').send(rpc(['titles', 0, 2, 'tags:d'])).expect(200);
    expect(res.body.id).toBe(7);
    expect(res.body.params).toEqual(['', ['titles', 0, 2, 'tags:d']]);
    expect(res.body.result.count).toBe(30);
    for (const t of res.body.result.titles_loop) expect(Object.keys(t).sort()).toEqual(['duration', 'id', 'title']);
  });

  it('When a command is unknown or the playcount sort lacks its join, then the socket is closed', async () => {
    const f = createFakeLyrion({ catalogue: cat });
    await expect(request(f.app).post('/jsonrpc.js').send(rpc(['nonsense']))).rejects.toThrow(/socket hang up|ECONNRESET/);
    await expect(request(f.app).post('/jsonrpc.js').send(rpc(['titles', 0, 5, 'tags:a', 'sort:sql=tracks_persistent.playcount DESC']))).rejects.toThrow(/socket hang up|ECONNRESET/);
    const ok = await request(f.app).post('/jsonrpc.js').send(rpc(['titles', 0, 30, 'tags:O', 'sort:sql=tracks_persistent.playcount DESC'])).expect(200);
    const counts = ok.body.result.titles_loop.map((t: { playcount: number }) => t.playcount);
    expect(counts).toEqual([...counts].sort((a: number, b: number) => b - a));
  });

  it('When a path has spaces or #, then the file:// URL is percent-encoded once', () => {
    const url = fileUrl('/srv/music/My Band/Track #1?.ogg');
    expect(url).toBe('file:///srv/music/My%20Band/Track%20%231%3F.ogg');
    expect(decodeURIComponent(new URL(url).pathname)).toBe('/srv/music/My Band/Track #1?.ogg');
  });

  it('When a playlist name exists, then playlists new answers overwritten_playlist_id and creates nothing', async () => {
    const f = createFakeLyrion({ catalogue: cat });
    const first = await request(f.app).post('/jsonrpc.js').send(rpc(['playlists', 'new', 'name:Mix'])).expect(200);
    const again = await request(f.app).post('/jsonrpc.js').send(rpc(['playlists', 'new', 'name:Mix'])).expect(200);
    expect(again.body.result).toEqual({ overwritten_playlist_id: first.body.result.playlist_id });
    expect(f.playlists()).toHaveLength(1);
  });

  it('When password protection is on, then requests without Basic auth get 401 with a Basic challenge', async () => {
    const f = createFakeLyrion({ catalogue: cat, user: 'u', password: 'p' });
    const res = await request(f.app).post('/jsonrpc.js').send(rpc(['version', '?'])).expect(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    await request(f.app).post('/jsonrpc.js').auth('u', 'p').send(rpc(['version', '?'])).expect(200);
  });

  it('When player commands name no connected player, then the socket is closed', async () => {
    const f = createFakeLyrion({ catalogue: cat });
    await expect(request(f.app).post('/jsonrpc.js').send(rpc(['playlistcontrol', 'cmd:add', 'track_id:1'], 'aa:bb'))).rejects.toThrow(/socket hang up|ECONNRESET/);
  });
});

describe('fake Plex', () => {
  it('When no token is sent, then 401 with an HTML body, except /identity', async () => {
    const f = createFakePlex({ catalogue: cat });
    const res = await request(f.app).get('/library/sections').set('Accept', 'application/json').expect(401);
    expect(res.text).toContain('<html>');
    const id = await request(f.app).get('/identity').set('Accept', 'application/json').expect(200);
    expect(id.body.MediaContainer.machineIdentifier).toBe(f.machineIdentifier);
  });

  it('When Accept is not JSON, then the answer is XML', async () => {
    const f = createFakePlex({ catalogue: cat });
    const res = await request(f.app).get('/library/sections').set('X-Plex-Token', f.token).expect(200);
    expect(res.text).toMatch(/^<\?xml/);
    expect(res.text).toContain('<Directory allowSync="true" key="1" type="artist"');
  });

  it('When container paging comes as query parameters, then size/offset/totalSize follow it; durations are ms', async () => {
    const f = createFakePlex({ catalogue: cat });
    const res = await request(f.app)
      .get('/library/sections/1/all')
      .set({ 'X-Plex-Token': f.token, Accept: 'application/json' })
      .query({ type: 10, 'X-Plex-Container-Start': 2, 'X-Plex-Container-Size': 3 })
      .expect(200);
    const mc = res.body.MediaContainer;
    const inLib = cat.indicesIn(['lib-syn-1']);
    expect([mc.size, mc.offset, mc.totalSize]).toEqual([3, 2, inLib.length]);
    expect(mc.Metadata[0].ratingKey).toBe(f.idOf(cat.trackAt(inLib[2] as number)));
    expect(mc.Metadata[0].duration).toBe(Math.round(cat.trackAt(inLib[2] as number).durationSeconds * 1000));
    expect(typeof mc.Metadata[0].ratingKey).toBe('string');
  });

  it('When viewCount>>=0 is asked, then unplayed tracks are filtered out', async () => {
    const f = createFakePlex({ catalogue: cat });
    const res = await request(f.app).get(`/library/sections/1/all?type=10&${encodeURIComponent('viewCount>>')}=0`).set({ 'X-Plex-Token': f.token, Accept: 'application/json' }).expect(200);
    const expected = cat.indicesIn(['lib-syn-1']).filter((i) => cat.trackAt(i).playCount > 0).length;
    expect(res.body.MediaContainer.Metadata).toHaveLength(expected);
    expect(res.body.MediaContainer.Metadata.every((m: { viewCount?: number }) => (m.viewCount ?? 0) > 0)).toBe(true);
  });

  it('When a playlist uri names another server or too many ids, then 400', async () => {
    const f = createFakePlex({ catalogue: cat, maxIdsPerRequest: 2 });
    const ids = [0, 1, 2].map((i) => f.idOf(cat.trackAt(i)));
    const uri = (mid: string, list: string[]) => `server://${mid}/com.plexapp.plugins.library/library/metadata/${list.join(',')}`;
    const h = { 'X-Plex-Token': f.token, Accept: 'application/json' };
    await request(f.app).post('/playlists').set(h).query({ type: 'audio', title: 'x', smart: 0, uri: uri('other', ids.slice(0, 2)) }).expect(400);
    await request(f.app).post('/playlists').set(h).query({ type: 'audio', title: 'x', smart: 0, uri: uri(f.machineIdentifier, ids) }).expect(400);
    const ok = await request(f.app).post('/playlists').set(h).query({ type: 'audio', title: 'x', smart: 0, uri: uri(f.machineIdentifier, ids.slice(0, 2)) }).expect(200);
    expect(ok.body.MediaContainer.Metadata[0]).toMatchObject({ type: 'playlist', playlistType: 'audio', smart: false, leafCount: 2 });
  });
});

describe('fake plex.tv', () => {
  it('When a PIN is created, then 201 with authToken null; the token appears only after approve()', async () => {
    const tv = createFakePlexTv({ accountToken: 'tok' });
    await request(tv.app).post('/api/v2/pins').set('Accept', 'application/json').expect(400);
    const h = { Accept: 'application/json', 'X-Plex-Product': 'p', 'X-Plex-Client-Identifier': 'cid' };
    const created = await request(tv.app).post('/api/v2/pins').set(h).type('form').send('strong=true').expect(201);
    expect(created.body.authToken).toBeNull();
    expect(created.body.code).toHaveLength(25);
    await request(tv.app).get(`/api/v2/pins/${created.body.id}`).set({ ...h, 'X-Plex-Client-Identifier': 'other' }).expect(404);
    const pending = await request(tv.app).get(`/api/v2/pins/${created.body.id}`).set(h).expect(200);
    expect(pending.body.authToken).toBeNull();
    tv.approve(created.body.id);
    const linked = await request(tv.app).get(`/api/v2/pins/${created.body.id}`).set(h).expect(200);
    expect(linked.body.authToken).toBe('tok');
    await request(tv.app).get('/api/v2/user').set({ Accept: 'application/json', 'X-Plex-Token': 'tok' }).expect(200);
    await request(tv.app).get('/api/v2/user').set({ Accept: 'application/json', 'X-Plex-Token': 'bad' }).expect(401);
  });
});

describe('synthetic catalogue', () => {
  it('When 100k tracks are asked, then reads are lazy and deterministic, and updates persist', () => {
    const big = syntheticCatalogue(100_000, { audioFile: '/dev/null' });
    expect(big.size).toBe(100_000);
    expect(big.trackAt(99_999)).toEqual(big.trackAt(99_999));
    expect(() => big.trackAt(100_000)).toThrow(RangeError);
    expect(big.indexOfId('syn-42')).toBe(42);
    const parts = big.libraries.map((l) => big.indicesIn([l.id]).length);
    expect(parts.reduce((a, b) => a + b, 0)).toBe(100_000);
    const v = big.version;
    big.update('syn-5', { title: 'Renamed', playCount: 3 });
    expect(big.trackAt(5).title).toBe('Renamed');
    expect(big.version).toBe(v + 1);
    const small = syntheticCatalogue(25, { audioFile: '/dev/null', tracksPerAlbum: 10 });
    expect(small.albums().map((a) => a.trackIndices.length)).toEqual([10, 10, 5]);
    expect(small.albums()[0]?.trackIndices).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
