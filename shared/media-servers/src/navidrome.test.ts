import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ServerResponse } from 'node:http';
import { BadCredentialsError, NotFoundError, ProtocolError, UnreachableError } from './errors';
import { NavidromeClient, mapSubsonicSong, subsonicToken } from './navidrome';
import { collectPages, sendJson, type RecordedRequest, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

const USER = 'alice';
const PASSWORD = 's3same!';

const ok = (payload: Record<string, unknown> = {}): unknown => ({
  'subsonic-response': { status: 'ok', version: '1.16.1', type: 'navidrome', serverVersion: '0.58.0', openSubsonic: true, ...payload },
});
const failed = (code: number, message: string): unknown => ({
  'subsonic-response': { status: 'failed', version: '1.16.1', error: { code, message } },
});

function authOk(req: RecordedRequest): boolean {
  const s = req.query.get('s') ?? '';
  return req.query.get('u') === USER && s.length >= 6 && req.query.get('t') === subsonicToken(PASSWORD, s);
}

/** Subsonic stub: checks auth, serves `total[folder]` songs through search3. */
function subsonic(total: Record<string, number>, extra?: (req: RecordedRequest, res: ServerResponse) => boolean) {
  return (req: RecordedRequest, res: ServerResponse): void => {
    if (!authOk(req)) return sendJson(res, failed(40, 'Wrong username or password'));
    if (extra?.(req, res)) return;
    if (req.path === '/rest/getMusicFolders.view') {
      // The folders that hold songs ('' = songs listed without a folder only: a server that lists no folder).
      const musicFolder = Object.keys(total).filter((k) => k !== '').map((id) => ({ id: Number(id), name: `Folder ${id}` }));
      return sendJson(res, ok({ musicFolders: musicFolder.length ? { musicFolder } : {} }));
    }
    if (req.path === '/rest/search3.view') {
      const folder = req.query.get('musicFolderId') ?? '';
      const n = total[folder] ?? 0;
      const off = Number(req.query.get('songOffset'));
      const cnt = Number(req.query.get('songCount'));
      const song = Array.from({ length: Math.max(0, Math.min(cnt, n - off)) }, (_, i) => ({
        id: `${folder || 'all'}-${off + i}`, title: `T${off + i}`, isDir: false, artist: 'A', duration: 178,
      }));
      return sendJson(res, ok({ searchResult3: song.length ? { song } : {} }));
    }
    return sendJson(res, failed(0, 'unknown'));
  };
}

describe(NavidromeClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();
  const make = (url: string, musicLibraries?: string[], password = PASSWORD): NavidromeClient =>
    new NavidromeClient({ type: 'navidrome', creds: { url, user: USER, password }, musicLibraries }, { retries: 0 });

  it('When computing the salted token, then it matches the Subsonic worked example', () => {
    expect(subsonicToken('sesame', 'c19b2d')).toBe('26719a1196d2a940705a59634eb18eab');
  });

  it('When enumerating 1000 songs, then search3 is paged by 500 with salted-token auth and a fresh salt per call', async () => {
    stub = await startStub(subsonic({ '': 1000 }));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(tracks).toHaveLength(1000);
    // A server that lists no music folder is walked whole: getMusicFolders, then 1000 = 2 full pages and a third (empty) one.
    expect(stub.requests.map((r) => r.path)).toEqual(['/rest/getMusicFolders.view', ...Array<string>(3).fill('/rest/search3.view')]);
    const searches = stub.requests.slice(1);
    expect(searches.map((r) => r.query.get('songOffset'))).toEqual(['0', '500', '1000']);
    const q = searches[0]?.query;
    expect([q?.get('v'), q?.get('c'), q?.get('f'), q?.get('u')]).toEqual(['1.16.1', 'polyphony', 'json', USER]);
    expect([q?.get('query'), q?.get('songCount'), q?.get('artistCount'), q?.get('albumCount')]).toEqual(['', '500', '0', '0']);
    expect(q?.has('p')).toBe(false);
    expect(q?.has('musicFolderId')).toBe(false);
    expect(tracks.every((t) => t.libraryId === undefined)).toBe(true);
    const salts = new Set(stub.requests.map((r) => r.query.get('s')));
    expect(salts.size).toBe(4);
  });

  it('When no folder filter is set, then every music folder is walked with its musicFolderId and each song carries it as its library', async () => {
    stub = await startStub(subsonic({ '1': 3, '2': 2 }));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    // getMusicFolders, one probe song per folder (the server honours musicFolderId: different first songs), then the walk.
    expect(stub.requests.map((r) => `${r.path.replace('/rest/', '')}:${r.query.get('musicFolderId') ?? ''}:${r.query.get('songCount') ?? ''}`)).toEqual([
      'getMusicFolders.view::', 'search3.view:1:1', 'search3.view:2:1', 'search3.view:1:500', 'search3.view:2:500',
    ]);
    expect(tracks.map((t) => `${t.id}@${t.libraryId}`)).toEqual(['1-0@1', '1-1@1', '1-2@1', '2-0@2', '2-1@2']);
  });

  it('When the server ignores musicFolderId in search3 (supysonic 0.7), then the server is walked once with no library recorded', async () => {
    stub = await startStub((req, res) => {
      if (!authOk(req)) return sendJson(res, failed(40, 'Wrong username or password'));
      if (req.path === '/rest/getMusicFolders.view') return sendJson(res, ok({ musicFolders: { musicFolder: [{ id: '1', name: 'A' }, { id: '2', name: 'B' }] } }));
      const cnt = Number(req.query.get('songCount'));
      const off = Number(req.query.get('songOffset'));
      const song = Array.from({ length: Math.max(0, Math.min(cnt, 3 - off)) }, (_, i) => ({ id: `s${off + i}`, title: 'T', artist: 'A', isDir: false }));
      return sendJson(res, ok({ searchResult3: { song } }));
    });
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(tracks.map((t) => [t.id, t.libraryId])).toEqual([['s0', undefined], ['s1', undefined], ['s2', undefined]]);
    expect(stub.requests.filter((r) => r.query.get('songCount') === '500').map((r) => r.query.get('musicFolderId'))).toEqual([null]);
  });

  it('When a folder filter is set, then each folder is enumerated with musicFolderId and a short page ends it', async () => {
    stub = await startStub(subsonic({ '1': 2, '3': 501 }));
    const tracks = await collectPages(make(stub.url, ['1', '3']).iterateTracks());
    expect(tracks).toHaveLength(503);
    const pages = stub.requests.filter((r) => r.query.get('songCount') === '500');
    expect(pages.map((r) => `${r.query.get('musicFolderId')}@${r.query.get('songOffset')}`)).toEqual(['1@0', '3@0', '3@500']);
  });

  it('When the password is wrong (code 40 inside HTTP 200), then BadCredentialsError without the password in the message', async () => {
    stub = await startStub(subsonic({ '': 1 }));
    const err = (await collectPages(make(stub.url, undefined, 'nope-secret').iterateTracks()).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(BadCredentialsError);
    expect((err as BadCredentialsError).code).toBe(40);
    expect(err.message).not.toContain('nope-secret');
  });

  it('When token auth is unsupported (code 41), then BadCredentialsError', async () => {
    stub = await startStub((_req, res) => sendJson(res, failed(41, 'Token authentication not supported')));
    await expect(make(stub.url).listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When a server only knows p (code 10 for t+s, like supysonic 0.7), then the client switches to p=enc: and stays there', async () => {
    stub = await startStub((req, res) => {
      if (!req.query.has('p')) return sendJson(res, failed(10, 'Missing parameter: p'));
      if (req.query.get('p') !== `enc:${Buffer.from(PASSWORD, 'utf8').toString('hex')}`) return sendJson(res, failed(40, 'Wrong username or password'));
      return sendJson(res, ok({ musicFolders: { musicFolder: [{ id: '1', name: 'Music' }] } }));
    });
    const client = make(stub.url);
    await expect(client.listLibraries()).resolves.toEqual([{ id: '1', name: 'Music' }]);
    await expect(client.listLibraries()).resolves.toHaveLength(1);
    expect(stub.requests.map((r) => (r.query.has('t') ? 't' : 'p'))).toEqual(['t', 'p', 'p']);
    await expect(make(stub.url, undefined, 'wrong').listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When the envelope is missing or failed with another code, then ProtocolError / NotFoundError', async () => {
    stub = await startStub((req, res) => {
      if (req.path === '/rest/getMusicFolders.view') return sendJson(res, { hello: 1 });
      if (req.path === '/rest/deletePlaylist.view') return sendJson(res, failed(70, 'not found'));
      return sendJson(res, failed(10, 'missing parameter'));
    });
    await expect(make(stub.url).listLibraries()).rejects.toBeInstanceOf(ProtocolError);
    await expect(make(stub.url).deletePlaylist('x')).rejects.toBeInstanceOf(NotFoundError);
    await expect(make(stub.url).listPlaylists()).rejects.toBeInstanceOf(ProtocolError);
  });

  it('When a page fails mid-enumeration, then iterateTracks throws', async () => {
    stub = await startStub(subsonic({ '': 2000 }, (req, res) => {
      if (req.query.get('songOffset') === '1000') {
        sendJson(res, {}, 500);
        return true;
      }
      return false;
    }));
    await expect(collectPages(make(stub.url).iterateTracks())).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When mapping a Child, then fields normalise (ids strings, int seconds, 1-5 rating, displayAlbumArtist)', () => {
    expect(mapSubsonicSong({
      id: 42, title: 'Polar', artist: 'TND', artistId: '97e0', album: 'Live', albumId: 'e8a0', year: 2005, duration: 178,
      path: 'TND/Live/04 - Polar.flac', playCount: 8, played: '2023-03-26T22:27:46Z', userRating: 4, displayAlbumArtist: 'TND',
    })).toEqual({
      id: '42', title: 'Polar', artist: 'TND', artistId: '97e0', album: 'Live', albumId: 'e8a0', albumArtist: 'TND', year: 2005,
      rating: 4, durationSeconds: 178, path: 'TND/Live/04 - Polar.flac', playCount: 8, lastPlayed: '2023-03-26T22:27:46.000Z',
    });
  });

  it('When listing folders, then int ids become strings (single-object lists accepted)', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path !== '/rest/getMusicFolders.view') return false;
      sendJson(res, ok({ musicFolders: { musicFolder: { id: 1, name: 'Music' } } }));
      return true;
    }));
    await expect(make(stub.url).listLibraries()).resolves.toEqual([{ id: '1', name: 'Music' }]);
  });

  it('When creating a playlist of 95 songs, then createPlaylist carries 40 repeated songId and updatePlaylist adds 40 + 15', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/createPlaylist.view') sendJson(res, ok({ playlist: { id: 'pl1', name: 'Mix', songCount: 40 } }));
      else if (req.path === '/rest/updatePlaylist.view') sendJson(res, ok());
      else return false;
      return true;
    }));
    const ids = Array.from({ length: 95 }, (_, i) => `s${i}`);
    await expect(make(stub.url).createPlaylist('Mix', ids)).resolves.toEqual({ id: 'pl1', name: 'Mix', trackCount: 95 });
    const [create, up1, up2] = stub.requests;
    expect(create?.query.get('name')).toBe('Mix');
    expect(create?.query.getAll('songId')).toEqual(ids.slice(0, 40));
    expect(up1?.query.get('playlistId')).toBe('pl1');
    expect(up1?.query.getAll('songIdToAdd')).toEqual(ids.slice(40, 80));
    expect(up2?.query.getAll('songIdToAdd')).toEqual(ids.slice(80));
    expect(stub.requests).toHaveLength(3);
  });

  it('When the server returns no playlist from createPlaylist (pre-1.14), then the id is found by name', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/createPlaylist.view') sendJson(res, ok());
      else if (req.path === '/rest/getPlaylists.view') sendJson(res, ok({ playlists: { playlist: [{ id: 'old', name: 'Other' }, { id: 'new', name: 'Mix', songCount: 2 }] } }));
      else return false;
      return true;
    }));
    await expect(make(stub.url).createPlaylist('Mix', ['a', 'b'])).resolves.toEqual({ id: 'new', name: 'Mix', trackCount: 2 });
  });

  it('When an updatePlaylist batch fails, then the playlist is deleted and the error rethrown', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/createPlaylist.view') sendJson(res, ok({ playlist: { id: 'pl2' } }));
      else if (req.path === '/rest/updatePlaylist.view') sendJson(res, failed(0, 'db locked'));
      else if (req.path === '/rest/deletePlaylist.view') sendJson(res, ok());
      else return false;
      return true;
    }));
    await expect(make(stub.url).createPlaylist('Mix', Array.from({ length: 50 }, (_, i) => `${i}`))).rejects.toBeInstanceOf(ProtocolError);
    expect(stub.requests.at(-1)?.path).toBe('/rest/deletePlaylist.view');
    expect(stub.requests.at(-1)?.query.get('id')).toBe('pl2');
  });

  it('When download answers a JSON error (downloads disabled, code 50), then stream?format=raw is used and bytes written', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nd-'));
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/download.view') sendJson(res, failed(50, 'downloads are disabled'));
      else if (req.path === '/rest/stream.view') {
        res.writeHead(200, { 'Content-Type': 'audio/flac' });
        res.end(Buffer.alloc(4321, 9));
      } else return false;
      return true;
    }));
    try {
      await expect(make(stub.url).downloadTrack('s1', path.join(dir, 'x'))).resolves.toBe(4321);
      expect(stub.requests[1]?.query.get('format')).toBe('raw');
      expect(stub.requests[1]?.query.get('id')).toBe('s1');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When download answers an auth error envelope, then BadCredentialsError and no file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nd-'));
    stub = await startStub((_req, res) => sendJson(res, failed(40, 'Wrong username or password')));
    try {
      await expect(make(stub.url).downloadTrack('s1', path.join(dir, 'x'))).rejects.toBeInstanceOf(BadCredentialsError);
      expect(fs.existsSync(path.join(dir, 'x'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When testing the connection, then ping + folders + a 50-song sample; relative Navidrome paths are reported', async () => {
    stub = await startStub(subsonic({ '': 3 }, (req, res) => {
      if (req.path === '/rest/ping.view') sendJson(res, ok());
      else if (req.path === '/rest/getMusicFolders.view') sendJson(res, ok({ musicFolders: { musicFolder: [{ id: 1, name: 'Music' }] } }));
      else return false;
      return true;
    }));
    const r = await make(stub.url).testConnection();
    expect(r).toEqual({
      ok: true, serverName: 'navidrome', version: '0.58.0', sampleTrackCount: 3, libraries: [{ id: '1', name: 'Music' }], pathsLookAbsolute: false,
    });
    expect(stub.requests.at(-1)?.query.get('songCount')).toBe('50');
  });

  it('When lyrics exist via getLyricsBySongId, then unsynced lines are joined; code 70 gives undefined', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path !== '/rest/getLyricsBySongId.view') return false;
      if (req.query.get('id') === 'has') {
        sendJson(res, ok({ lyricsList: { structuredLyrics: [
          { lang: 'en', synced: true, line: [{ start: 0, value: 'synced a' }] },
          { lang: 'en', synced: false, line: [{ value: 'plain a' }, { value: 'plain b' }] },
        ] } }));
      } else sendJson(res, failed(70, 'not found'));
      return true;
    }));
    await expect(make(stub.url).getLyrics('has')).resolves.toBe('plain a\nplain b');
    await expect(make(stub.url).getLyrics('none')).resolves.toBeUndefined();
  });

  it('When the server lacks getLyricsBySongId (HTTP 404), then getLyrics?artist&title is used, from getSong or the hint, and remembered', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/getLyricsBySongId.view') {
        sendJson(res, failed(0, 'Unknown method'), 404);
      } else if (req.path === '/rest/getSong.view') {
        sendJson(res, ok({ song: { id: req.query.get('id'), title: 'Song One', artist: 'Band', isDir: false } }));
      } else if (req.path === '/rest/getLyrics.view') {
        const hit = req.query.get('artist') === 'Band' && req.query.get('title') === 'Song One';
        sendJson(res, ok({ lyrics: hit ? { artist: 'Band', title: 'Song One', value: 'la la\nla' } : {} }));
      } else return false;
      return true;
    }));
    const c = make(stub.url);
    await expect(c.getLyrics('s1')).resolves.toBe('la la\nla');
    expect(stub.requests.map((q) => q.path)).toEqual(['/rest/getLyricsBySongId.view', '/rest/getSong.view', '/rest/getLyrics.view']);
    stub.requests.length = 0;
    await expect(c.getLyrics('s2', { artist: 'Band', title: 'Other' })).resolves.toBeUndefined();
    expect(stub.requests.map((q) => q.path)).toEqual(['/rest/getLyrics.view']);
  });

  it('When fetching history, then recent albums are expanded and songs sorted by played, newest first', async () => {
    stub = await startStub(subsonic({}, (req, res) => {
      if (req.path === '/rest/getAlbumList2.view') {
        sendJson(res, ok({ albumList2: { album: [{ id: 'A', played: '2024-01-03T00:00:00Z' }, { id: 'B', played: '2024-01-02T00:00:00Z' }] } }));
      } else if (req.path === '/rest/getAlbum.view') {
        const songs = req.query.get('id') === 'A'
          ? [{ id: 'a1', title: 'a1', played: '2024-01-03T00:00:00Z', playCount: 2 }, { id: 'a2', title: 'a2', played: '2023-01-01T00:00:00Z', playCount: 1 }, { id: 'a3', title: 'never' }]
          : [{ id: 'b1', title: 'b1', played: '2024-01-02T00:00:00Z', playCount: 5 }];
        sendJson(res, ok({ album: { id: req.query.get('id'), song: songs } }));
      } else return false;
      return true;
    }));
    const h = await make(stub.url).getListeningHistory(2);
    expect(h.map((t) => t.id)).toEqual(['a1', 'b1']);
    expect(stub.requests[0]?.query.get('type')).toBe('recent');
  });
});
