import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ServerResponse } from 'node:http';
import { BadCredentialsError, UnreachableError } from './errors';
import { PlexClient, mapPlexTrack } from './plex';
import { collectPages, sendJson, type RecordedRequest, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

const TOKEN = 'plex-token-XYZ123';
const MID = 'a1b2c3d4e5';

function track(i: number, section: string): Record<string, unknown> {
  return {
    ratingKey: `${section}${i}`, key: `/library/metadata/${section}${i}`, type: 'track', title: `T${i}`,
    grandparentTitle: 'The New Deal', grandparentRatingKey: '12000', parentTitle: 'Live', parentRatingKey: '12300',
    parentYear: 2005, duration: 178000, userRating: 8.0, viewCount: 8, lastViewedAt: 1679869666,
    Media: [{ container: 'flac', Part: [{ key: `/library/parts/${i}/1678816282/file.flac`, file: `/data/music/${i}.flac` }] }],
  };
}

/** Plex stub: token check, `/identity`, sections 3 (music) and 1 (movies), `n[section]` tracks with container paging. */
function plex(n: Record<string, number>, extra?: (req: RecordedRequest, res: ServerResponse) => boolean) {
  return (req: RecordedRequest, res: ServerResponse): void => {
    if (req.path === '/identity') return sendJson(res, { MediaContainer: { size: 0, claimed: true, machineIdentifier: MID, version: '1.41.3.9314' } });
    if (req.headers['x-plex-token'] !== TOKEN) {
      res.writeHead(401, { 'Content-Type': 'text/html' });
      return void res.end('<html><body>401 Unauthorized</body></html>');
    }
    if (extra?.(req, res)) return;
    if (req.path === '/library/sections') {
      return sendJson(res, { MediaContainer: { size: 2, Directory: [
        { key: '3', type: 'artist', title: 'Music', Location: [{ id: 3, path: '/data/music' }] },
        { key: '1', type: 'movie', title: 'Movies' },
      ] } });
    }
    const m = /^\/library\/sections\/(\w+)\/all$/.exec(req.path);
    if (m) {
      const section = m[1] ?? '';
      const total = n[section] ?? 0;
      const start = Number(req.headers['x-plex-container-start'] ?? req.query.get('X-Plex-Container-Start') ?? 0);
      const size = Number(req.headers['x-plex-container-size'] ?? req.query.get('X-Plex-Container-Size') ?? total);
      const items = [];
      for (let i = start; i < Math.min(total, start + size); i++) items.push(track(i, section));
      return sendJson(res, { MediaContainer: { size: items.length, totalSize: total, offset: start, Metadata: items } });
    }
    return sendJson(res, {}, 404);
  };
}

describe(PlexClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();
  const make = (url: string, musicLibraries?: string[], token = TOKEN): PlexClient =>
    new PlexClient({ type: 'plex', creds: { url, token }, musicLibraries }, { retries: 0, plexClientId: 'cid-1' });

  it('When enumerating 2500 tracks, then /all?type=10 is paged 1000 at a time with container start/size and token headers', async () => {
    stub = await startStub(plex({ '3': 2500 }));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(tracks).toHaveLength(2500);
    const pages = stub.requests.filter((r) => r.path.endsWith('/all'));
    expect(pages.map((r) => [r.headers['x-plex-container-start'], r.headers['x-plex-container-size']])).toEqual([
      ['0', '1000'], ['1000', '1000'], ['2000', '1000'],
    ]);
    expect(pages[0]?.query.get('type')).toBe('10');
    expect(pages[0]?.query.get('X-Plex-Container-Start')).toBe('0');
    expect(pages[0]?.headers.accept).toBe('application/json');
    expect(pages[0]?.headers['x-plex-client-identifier']).toBe('cid-1');
    // Only the music section (type "artist") is enumerated.
    expect(stub.requests.some((r) => r.path.startsWith('/library/sections/1/'))).toBe(false);
  });

  it('When a section filter is set, then only those section keys are read and /library/sections is not needed', async () => {
    stub = await startStub(plex({ '7': 3, '3': 5 }));
    const tracks = await collectPages(make(stub.url, ['7']).iterateTracks());
    expect(tracks).toHaveLength(3);
    expect(stub.requests.map((r) => r.path)).toEqual(['/library/sections/7/all']);
  });

  it('When mapping a track, then ms become seconds, userRating 0-10 becomes stars and lastViewedAt becomes ISO', () => {
    expect(mapPlexTrack(track(4, 's') as never)).toEqual({
      id: 's4', title: 'T4', artist: 'The New Deal', artistId: '12000', album: 'Live', albumId: '12300', albumArtist: 'The New Deal',
      year: 2005, rating: 4, durationSeconds: 178, path: '/data/music/4.flac', playCount: 8, lastPlayed: '2023-03-26T22:27:46.000Z',
    });
    expect(mapPlexTrack({ ratingKey: 1, title: 'x', originalTitle: 'Guest', grandparentTitle: 'Host', grandparentRatingKey: 9, year: 1999 })).toEqual({
      id: '1', title: 'x', artist: 'Guest', albumArtist: 'Host', year: 1999,
    });
  });

  it('When the token is bad, then BadCredentialsError (HTML 401 body)', async () => {
    stub = await startStub(plex({}));
    await expect(make(stub.url, undefined, 'wrong').listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When a page fails mid-enumeration, then iterateTracks throws', async () => {
    stub = await startStub(plex({ '3': 3000 }, (req, res) => {
      if (req.headers['x-plex-container-start'] !== '2000') return false;
      sendJson(res, {}, 500);
      return true;
    }));
    await expect(collectPages(make(stub.url).iterateTracks())).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When creating a playlist of 230 tracks, then the URI names the machine and holds 100 ids, the rest is PUT in batches', async () => {
    stub = await startStub(plex({}, (req, res) => {
      if (req.method === 'POST' && req.path === '/playlists') {
        sendJson(res, { MediaContainer: { size: 1, Metadata: [{ ratingKey: '555', type: 'playlist', title: 'Mix', leafCount: 100 }] } });
      } else if (req.method === 'PUT' && req.path === '/playlists/555/items') sendJson(res, { MediaContainer: { size: 1 } });
      else return false;
      return true;
    }));
    const ids = Array.from({ length: 230 }, (_, i) => String(1000 + i));
    await expect(make(stub.url).createPlaylist('Mix', ids)).resolves.toEqual({ id: '555', name: 'Mix', trackCount: 230 });
    const uri = (batch: string[]): string => `server://${MID}/com.plexapp.plugins.library/library/metadata/${batch.join(',')}`;
    const writes = stub.requests.filter((r) => r.path.startsWith('/playlists'));
    expect(writes.map((r) => r.method)).toEqual(['POST', 'PUT', 'PUT']);
    expect(Object.fromEntries(writes[0]?.query ?? [])).toEqual({ type: 'audio', title: 'Mix', smart: '0', uri: uri(ids.slice(0, 100)) });
    expect(writes[1]?.query.get('uri')).toBe(uri(ids.slice(100, 200)));
    expect(writes[2]?.query.get('uri')).toBe(uri(ids.slice(200)));
    expect(stub.requests[0]?.path).toBe('/identity');
  });

  it('When downloading, then the part key is read from metadata and fetched with download=1', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plex-'));
    stub = await startStub(plex({}, (req, res) => {
      if (req.path === '/library/metadata/77') sendJson(res, { MediaContainer: { size: 1, Metadata: [track(77, '')] } });
      else if (req.path === '/library/parts/77/1678816282/file.flac') {
        res.writeHead(200, { 'Content-Type': 'audio/flac' });
        res.end(Buffer.alloc(999, 1));
      } else return false;
      return true;
    }));
    try {
      await expect(make(stub.url).downloadTrack('77', path.join(dir, 'x.flac'))).resolves.toBe(999);
      expect(stub.requests[1]?.query.get('download')).toBe('1');
      expect(stub.requests[1]?.headers['x-plex-token']).toBe(TOKEN);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When listing and deleting playlists, then /playlists?playlistType=audio and DELETE /playlists/{id}', async () => {
    stub = await startStub(plex({}, (req, res) => {
      if (req.path === '/playlists' && req.method === 'GET') {
        sendJson(res, { MediaContainer: { size: 1, Metadata: [{ ratingKey: '9', title: 'Old', leafCount: 12, playlistType: 'audio' }] } });
      } else if (req.method === 'DELETE') {
        res.statusCode = 200;
        res.end();
      } else return false;
      return true;
    }));
    await expect(make(stub.url).listPlaylists()).resolves.toEqual([{ id: '9', name: 'Old', trackCount: 12 }]);
    await make(stub.url).deletePlaylist('9');
    expect(stub.requests.map((r) => `${r.method} ${r.path}?${r.query.toString()}`)).toEqual(['GET /playlists?playlistType=audio', 'DELETE /playlists/9?']);
  });

  it('When fetching history, then tracks are sorted by lastViewedAt:desc with a viewCount filter and the limit as size', async () => {
    stub = await startStub(plex({ '3': 5 }));
    const h = await make(stub.url).getListeningHistory(5);
    expect(h).toHaveLength(5);
    const q = stub.requests.at(-1)!;
    expect(q.query.get('sort')).toBe('lastViewedAt:desc');
    expect(q.query.get('viewCount>>')).toBe('0');
    expect(q.headers['x-plex-container-size']).toBe('5');
  });

  it('When a lyric stream exists, then its text is fetched and LRC tags stripped', async () => {
    stub = await startStub(plex({}, (req, res) => {
      if (req.path === '/library/metadata/5') {
        sendJson(res, { MediaContainer: { Metadata: [{ ratingKey: '5', Media: [{ Part: [{ key: '/p', Stream: [
          { streamType: 2, key: '/nope' }, { streamType: 4, key: '/library/streams/88' },
        ] }] }] }] } });
      } else if (req.path === '/library/streams/88') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('[ar:Someone]\n[00:12.00]Hello\n[00:15.30]World\n');
      } else return false;
      return true;
    }));
    await expect(make(stub.url).getLyrics('5')).resolves.toBe('Hello\nWorld');
    await expect(make(stub.url).getLyrics('6')).resolves.toBeUndefined();
  });

  it('When testing the connection, then /identity gives the version and the first music section is sampled', async () => {
    stub = await startStub(plex({ '3': 2 }));
    const r = await make(stub.url).testConnection();
    expect(r).toEqual({
      ok: true, serverName: 'Plex Media Server', version: '1.41.3.9314', sampleTrackCount: 2,
      libraries: [{ id: '3', name: 'Music', path: '/data/music' }], pathsLookAbsolute: true,
    });
  });
});
