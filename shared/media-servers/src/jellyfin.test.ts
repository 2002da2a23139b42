import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BadCredentialsError, UnreachableError } from './errors';
import { JellyfinClient, jellyfinAuthorization } from './jellyfin';
import { mapJellyfinTrack } from './jellyfin-family';
import type { ProviderTrack } from './types';
import { collectPages, sendJson, type RecordedRequest, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

const TOKEN = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
const UID = '5f0c1e2d3c4b5a69788796a5b4c3d2e1';

function audioItem(i: number, lib = 'lib1'): Record<string, unknown> {
  return {
    Name: `Song ${i}`,
    Id: `${lib}-${String(i).padStart(6, '0')}`,
    Type: 'Audio',
    RunTimeTicks: 1_780_000_000 + i,
    ProductionYear: 2005,
    Album: 'Live',
    AlbumId: 'alb1',
    Artists: ['The New Deal'],
    ArtistItems: [{ Name: 'The New Deal', Id: 'art1' }],
    AlbumArtist: 'The New Deal',
    Path: `/data/music/${lib}/${i}.flac`,
    UserData: { PlayCount: 8, IsFavorite: false, Played: true, LastPlayedDate: '2023-03-26T22:27:46.0000000Z', Rating: 7 },
  };
}

/** Serves `/Items` from `counts[ParentId ?? '']` synthetic tracks, honouring StartIndex/Limit. */
function itemsHandler(counts: Record<string, number>, fail?: (req: RecordedRequest) => boolean) {
  return (req: RecordedRequest, res: import('node:http').ServerResponse): void => {
    if (fail?.(req)) return sendJson(res, { error: 'boom' }, 500);
    if (req.headers.authorization !== jellyfinAuthorization(TOKEN)) return sendJson(res, 'Unauthorized', 401);
    // The music libraries that hold tracks ('' = tracks listed without a library only: a server with no music library).
    if (req.path === '/Library/VirtualFolders') return sendJson(res, Object.keys(counts).filter((k) => k !== '').map((k) => ({ Name: k, CollectionType: 'music', ItemId: k, Locations: [`/${k}`] })));
    if (req.path === '/Items') {
      const parent = req.query.get('ParentId') ?? '';
      const total = counts[parent] ?? 0;
      const start = Number(req.query.get('StartIndex') ?? 0);
      const limit = Number(req.query.get('Limit') ?? total);
      const items = [];
      for (let i = start; i < Math.min(total, start + limit); i++) items.push(audioItem(i, parent || 'all'));
      return sendJson(res, { Items: items, TotalRecordCount: total, StartIndex: start });
    }
    return sendJson(res, {}, 404);
  };
}

describe(JellyfinClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();
  const make = (url: string, musicLibraries?: string[], token = TOKEN): JellyfinClient =>
    new JellyfinClient({ type: 'jellyfin', creds: { url, user_id: UID, token }, musicLibraries }, { retries: 1, backoffMs: 1 });

  it('When enumerating 1201 tracks, then it pages by 500 with the documented query and MediaBrowser auth', async () => {
    stub = await startStub(itemsHandler({ '': 1201 }));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(tracks).toHaveLength(1201);
    expect(new Set(tracks.map((t) => t.id)).size).toBe(1201);
    // No music library listed: the server is walked whole (library unknown).
    expect(stub.requests[0]?.path).toBe('/Library/VirtualFolders');
    const pages = stub.requests.slice(1);
    expect(pages.map((r) => r.query.get('StartIndex'))).toEqual(['0', '500', '1000']);
    expect(tracks.every((t) => t.libraryId === undefined)).toBe(true);
    const q = pages[0]?.query;
    expect(Object.fromEntries(q ?? [])).toEqual({
      userId: UID, IncludeItemTypes: 'Audio', Recursive: 'true', Fields: 'Path,DateCreated,MediaSources', StartIndex: '0',
      Limit: '500', SortBy: 'SortName', SortOrder: 'Ascending', EnableUserData: 'true',
    });
    expect(pages[0]?.headers.authorization).toMatch(/^MediaBrowser .*Token="a1b2c3d4e5f60718293a4b5c6d7e8f90"/);
    expect(pages[0]?.headers['x-emby-token']).toBeUndefined();
  });

  it('When no library filter is set, then each music library is paged with its ParentId and each track carries it as its library', async () => {
    stub = await startStub(itemsHandler({ libA: 2, libB: 1 }));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(stub.requests.map((r) => `${r.path}:${r.query.get('ParentId') ?? ''}`)).toEqual(['/Library/VirtualFolders:', '/Items:libA', '/Items:libB']);
    expect(tracks.map((t) => t.libraryId)).toEqual(['libA', 'libA', 'libB']);
  });

  it('When asked for the account\'s visible libraries, then the user\'s own music views are read (not VirtualFolders)', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/UserViews' && req.query.get('userId') === UID) {
        return sendJson(res, { Items: [{ Id: 'v1', Name: 'Music', CollectionType: 'music' }, { Id: 'v2', Name: 'Films', CollectionType: 'movies' }] });
      }
      return sendJson(res, {}, 404);
    });
    expect(await make(stub.url).visibleLibraries()).toEqual([{ id: 'v1', name: 'Music' }]);
    expect(stub.requests.map((r) => r.path)).toEqual(['/UserViews']);
  });

  it('When a library filter is set, then each library is paged with its ParentId', async () => {
    stub = await startStub(itemsHandler({ libA: 3, libB: 501 }));
    const tracks = await collectPages(make(stub.url, ['libA', 'libB']).iterateTracks());
    expect(tracks).toHaveLength(504);
    expect(stub.requests.map((r) => `${r.query.get('ParentId')}@${r.query.get('StartIndex')}`)).toEqual(['libA@0', 'libB@0', 'libB@500']);
  });

  it('When a page fails mid-enumeration, then iterateTracks throws instead of ending early', async () => {
    stub = await startStub(itemsHandler({ '': 1500 }, (r) => r.query.get('StartIndex') === '1000'));
    const seen: ProviderTrack[] = [];
    const run = async (): Promise<void> => {
      for await (const page of make(stub!.url).iterateTracks()) seen.push(...page);
    };
    await expect(run()).rejects.toBeInstanceOf(UnreachableError);
    expect(seen).toHaveLength(1000);
  });

  it('When the token is wrong, then BadCredentialsError', async () => {
    stub = await startStub(itemsHandler({ '': 1 }));
    await expect(collectPages(make(stub.url, undefined, 'wrong').iterateTracks())).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When mapping an Audio item, then ticks become seconds, the 0-10 rating becomes stars and ids stay strings', () => {
    const t = mapJellyfinTrack(audioItem(0) as never);
    expect(t).toEqual({
      id: 'lib1-000000', title: 'Song 0', artist: 'The New Deal', artistId: 'art1', album: 'Live', albumId: 'alb1',
      albumArtist: 'The New Deal', year: 2005, rating: 3.5, durationSeconds: 178, path: '/data/music/lib1/0.flac',
      playCount: 8, lastPlayed: '2023-03-26T22:27:46.000Z',
    });
    expect(mapJellyfinTrack({ Id: 'x', Name: 'y', Artists: ['Solo'], AlbumArtist: 'Band' })).toEqual({
      id: 'x', title: 'y', artist: 'Solo', albumArtist: 'Band',
    });
  });

  it('When /Library/VirtualFolders is admin-only (403), then listLibraries falls back to /UserViews', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/Library/VirtualFolders') return sendJson(res, {}, 403);
      if (req.path === '/UserViews') {
        return sendJson(res, { Items: [
          { Name: 'Music', Id: 'm1', CollectionType: 'music' },
          { Name: 'Films', Id: 'f1', CollectionType: 'movies' },
        ], TotalRecordCount: 2 });
      }
      return sendJson(res, {}, 404);
    });
    await expect(make(stub.url).listLibraries()).resolves.toEqual([{ id: 'm1', name: 'Music' }]);
    expect(stub.requests[1]?.query.get('userId')).toBe(UID);
  });

  it('When listing virtual folders as admin, then only music folders are returned with ItemId and path', async () => {
    stub = await startStub((_req, res) => sendJson(res, [
      { Name: 'Music', Locations: ['/data/music'], CollectionType: 'music', ItemId: '7e64' },
      { Name: 'Shows', Locations: ['/tv'], CollectionType: 'tvshows', ItemId: '9999' },
    ]));
    await expect(make(stub.url).listLibraries()).resolves.toEqual([{ id: '7e64', name: 'Music', path: '/data/music' }]);
  });

  it('When creating a playlist of 250 tracks, then it posts 100 in the body and appends 100 + 50', async () => {
    stub = await startStub((req, res) => {
      if (req.method === 'POST' && req.path === '/Playlists') return sendJson(res, { Id: 'pl1' });
      if (req.method === 'POST' && req.path === '/Playlists/pl1/Items') {
        res.statusCode = 204;
        return void res.end();
      }
      return sendJson(res, {}, 404);
    });
    const ids = Array.from({ length: 250 }, (_, i) => `t${i}`);
    await expect(make(stub.url).createPlaylist('Mix', ids)).resolves.toEqual({ id: 'pl1', name: 'Mix', trackCount: 250 });
    const [create, add1, add2] = stub.requests;
    expect(JSON.parse(create?.body ?? '{}')).toEqual({ Name: 'Mix', Ids: ids.slice(0, 100), UserId: UID, MediaType: 'Audio' });
    expect(create?.headers['content-type']).toBe('application/json');
    expect(add1?.query.get('ids')).toBe(ids.slice(100, 200).join(','));
    expect(add1?.query.get('userId')).toBe(UID);
    expect(add2?.query.get('ids')).toBe(ids.slice(200).join(','));
    expect(stub.requests).toHaveLength(3);
  });

  it('When appending to a new playlist fails, then the half-filled playlist is deleted and the error thrown', async () => {
    stub = await startStub((req, res) => {
      if (req.method === 'POST' && req.path === '/Playlists') return sendJson(res, { Id: 'pl9' });
      if (req.method === 'POST') return sendJson(res, {}, 500);
      if (req.method === 'DELETE' && req.path === '/Items/pl9') {
        res.statusCode = 204;
        return void res.end();
      }
      return sendJson(res, {}, 404);
    });
    await expect(make(stub.url).createPlaylist('Mix', Array.from({ length: 150 }, (_, i) => `t${i}`))).rejects.toBeInstanceOf(UnreachableError);
    expect(stub.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /Playlists', 'POST /Playlists/pl9/Items', 'DELETE /Items/pl9']);
  });

  it('When testing the connection, then it reports server info, libraries, the sample size and absolute paths', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/System/Info/Public') return sendJson(res, { ServerName: 'nas', Version: '10.10.7', ProductName: 'Jellyfin Server' });
      if (req.path === '/Library/VirtualFolders') return sendJson(res, [{ Name: 'Music', CollectionType: 'music', ItemId: 'lib1', Locations: ['/m'] }]);
      return itemsHandler({ '': 7, lib1: 7 })(req, res);
    });
    const r = await make(stub.url).testConnection();
    expect(r).toEqual({
      ok: true, serverName: 'nas', version: '10.10.7', sampleTrackCount: 7,
      libraries: [{ id: 'lib1', name: 'Music', path: '/m' }], pathsLookAbsolute: true,
    });
    expect(stub.requests.at(-1)?.query.get('Limit')).toBe('50');
  });

  it('When the token is refused during the connection test, then ok is false with errorKind bad_credentials', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/System/Info/Public') return sendJson(res, { ServerName: 'nas', Version: '10.10.7' });
      return sendJson(res, 'Unauthorized', 401);
    });
    const r = await make(stub.url).testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('bad_credentials');
    expect(r.message).not.toContain(TOKEN);
  });

  it('When fetching history, then it asks for played tracks sorted by DatePlayed descending', async () => {
    stub = await startStub((_req, res) => sendJson(res, { Items: [audioItem(1), audioItem(2)], TotalRecordCount: 2 }));
    const h = await make(stub.url).getListeningHistory(10);
    expect(h).toHaveLength(2);
    const q = stub.requests[0]?.query;
    expect([q?.get('SortBy'), q?.get('SortOrder'), q?.get('Filters'), q?.get('Limit')]).toEqual(['DatePlayed', 'Descending', 'IsPlayed', '10']);
    expect(h[0]?.lastPlayed).toBe('2023-03-26T22:27:46.000Z');
  });

  it('When lyrics exist, then their lines are joined; when the endpoint says 404, then undefined', async () => {
    stub = await startStub((req, res) =>
      req.path === '/Audio/t1/Lyrics' ? sendJson(res, { Lyrics: [{ Text: 'line one', Start: 0 }, { Text: 'line two', Start: 10 }] }) : sendJson(res, {}, 404),
    );
    await expect(make(stub.url).getLyrics('t1')).resolves.toBe('line one\nline two');
    await expect(make(stub.url).getLyrics('t2')).resolves.toBeUndefined();
  });

  it('When downloading without the download permission (403), then /Items/{id}/File is used', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jf-'));
    stub = await startStub((req, res) => {
      if (req.path === '/Items/t1/Download') return sendJson(res, {}, 403);
      if (req.path === '/Items/t1/File') {
        res.writeHead(200, { 'Content-Type': 'audio/flac' });
        return void res.end(Buffer.alloc(1234, 3));
      }
      return sendJson(res, {}, 404);
    });
    try {
      await expect(make(stub.url).downloadTrack('t1', path.join(dir, 'x.flac'))).resolves.toBe(1234);
      expect(stub.requests.map((r) => r.path)).toEqual(['/Items/t1/Download', '/Items/t1/File']);
      expect(stub.requests[1]?.headers.authorization).toContain(`Token="${TOKEN}"`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When deleting a playlist, then DELETE /Items/{id}', async () => {
    stub = await startStub((_req, res) => {
      res.statusCode = 204;
      res.end();
    });
    await make(stub.url).deletePlaylist('pl1');
    expect(stub.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['DELETE /Items/pl1']);
  });
});
