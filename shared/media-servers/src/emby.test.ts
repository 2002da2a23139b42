import { EmbyClient } from './emby';
import { BadCredentialsError, UnreachableError } from './errors';
import type { ProviderTrack } from './types';
import { sendJson, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

const TOKEN = 'emby-api-key-0123';
const UID = 'f00dfeedf00dfeedf00dfeedf00dfeed';

describe(EmbyClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();
  const make = (url: string, musicLibraries?: string[]): EmbyClient =>
    new EmbyClient({ type: 'emby', creds: { url, user_id: UID, token: TOKEN }, musicLibraries }, { retries: 0 });

  it('When enumerating, then it pages /emby/Users/{uid}/Items with X-Emby-Token and no userId query', async () => {
    stub = await startStub((req, res) => {
      if (req.headers['x-emby-token'] !== TOKEN) return sendJson(res, {}, 401);
      const start = Number(req.query.get('StartIndex'));
      const total = 600;
      const items = Array.from({ length: Math.max(0, Math.min(500, total - start)) }, (_, i) => ({
        Id: String(1000 + start + i), Name: `S${start + i}`, Type: 'Audio', RunTimeTicks: 2_000_000_000, Artists: ['A'],
      }));
      return sendJson(res, { Items: items, TotalRecordCount: total });
    });
    // The URL may already carry /emby; it is not doubled.
    const client = make(`${stub.url}/emby/`, ['lib7']);
    const out: ProviderTrack[] = [];
    for await (const page of client.iterateTracks()) out.push(...page);
    expect(out).toHaveLength(600);
    expect(out[0]).toEqual({ id: '1000', title: 'S0', artist: 'A', durationSeconds: 200, libraryId: 'lib7' });
    expect(stub.requests.map((r) => r.path)).toEqual([`/emby/Users/${UID}/Items`, `/emby/Users/${UID}/Items`]);
    expect(stub.requests[0]?.query.get('ParentId')).toBe('lib7');
    expect(stub.requests[0]?.query.has('userId')).toBe(false);
    expect(stub.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('When the key is rejected, then BadCredentialsError', async () => {
    stub = await startStub((_req, res) => sendJson(res, {}, 401));
    await expect(make(stub.url).listPlaylists()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When creating a playlist of 120 tracks, then Name/Ids/UserId/MediaType go in the query and the rest is appended', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/emby/Playlists') return sendJson(res, { Id: '123456', Name: 'Mix', ItemAddedCount: 100 });
      return sendJson(res, { Id: '123456', ItemAddedCount: 20 });
    });
    const ids = Array.from({ length: 120 }, (_, i) => String(i));
    await expect(make(stub.url).createPlaylist('Mix', ids)).resolves.toEqual({ id: '123456', name: 'Mix', trackCount: 120 });
    const [create, add] = stub.requests;
    expect(create?.method).toBe('POST');
    expect(create?.body).toBe('');
    expect(Object.fromEntries(create?.query ?? [])).toEqual({ Name: 'Mix', Ids: ids.slice(0, 100).join(','), UserId: UID, MediaType: 'Audio' });
    expect(add?.path).toBe('/emby/Playlists/123456/Items');
    expect(Object.fromEntries(add?.query ?? [])).toEqual({ Ids: ids.slice(100).join(','), UserId: UID });
  });

  it('When deleting a playlist, then POST /emby/Items/Delete?Ids=', async () => {
    stub = await startStub((_req, res) => {
      res.statusCode = 204;
      res.end();
    });
    await make(stub.url).deletePlaylist('77');
    expect(stub.requests.map((r) => `${r.method} ${r.path}?${r.query.toString()}`)).toEqual(['POST /emby/Items/Delete?Ids=77']);
  });

  it('When the bare VirtualFolders endpoint is missing, then the 4.8 /Query form is used', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/emby/Library/VirtualFolders/Query') {
        return sendJson(res, { Items: [{ Name: 'Music', ItemId: '9', Id: '9', CollectionType: 'music', Locations: ['/srv/m'] }], TotalRecordCount: 1 });
      }
      return sendJson(res, {}, 404);
    });
    await expect(make(stub.url).listLibraries()).resolves.toEqual([{ id: '9', name: 'Music', path: '/srv/m' }]);
  });

  it('When VirtualFolders is admin-only, then /emby/Users/{uid}/Views is used', async () => {
    stub = await startStub((req, res) => {
      if (req.path === `/emby/Users/${UID}/Views`) return sendJson(res, { Items: [{ Name: 'Tunes', Id: '4', CollectionType: 'music' }] });
      return sendJson(res, {}, 403);
    });
    await expect(make(stub.url).listLibraries()).resolves.toEqual([{ id: '4', name: 'Tunes' }]);
  });

  it('When asked for artists, then /emby/Artists/AlbumArtists is paged with UserId and ParentId', async () => {
    stub = await startStub((_req, res) => sendJson(res, { Items: [{ Id: '5', Name: 'Band' }], TotalRecordCount: 1 }));
    await expect(make(stub.url, ['lib1']).listArtists()).resolves.toEqual([{ id: '5', name: 'Band' }]);
    expect(stub.requests[0]?.path).toBe('/emby/Artists/AlbumArtists');
    expect(stub.requests[0]?.query.get('UserId')).toBe(UID);
    expect(stub.requests[0]?.query.get('ParentId')).toBe('lib1');
  });

  it('When asked for lyrics, then /emby/Audio/{id}/Lyrics is read once; 404 or an empty list gives undefined', async () => {
    stub = await startStub((req, res) =>
      req.path === '/emby/Audio/7/Lyrics' ? sendJson(res, { Lyrics: [{ Text: '[00:01.00]one' }, { Text: 'two' }] }) : sendJson(res, {}, 404),
    );
    await expect(make(stub.url).getLyrics('7')).resolves.toBe('one\ntwo');
    await expect(make(stub.url).getLyrics('8')).resolves.toBeUndefined();
    expect(stub.requests.map((q) => q.path)).toEqual(['/emby/Audio/7/Lyrics', '/emby/Audio/8/Lyrics']);
    expect(stub.requests[0]?.headers['x-emby-token']).toBeDefined();
  });

  it('When the lyrics endpoint does not answer within the lyrics timeout, then UnreachableError after one attempt', async () => {
    stub = await startStub(() => undefined);
    const c = new EmbyClient({ type: 'emby', creds: { url: stub.url, user_id: UID, token: 'tok' } }, { retries: 3, backoffMs: 1, lyricsTimeoutMs: 150 });
    const t0 = Date.now();
    await expect(c.getLyrics('9')).rejects.toBeInstanceOf(UnreachableError);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(stub.requests).toHaveLength(1);
  });
});
