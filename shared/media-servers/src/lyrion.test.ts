import type { ServerResponse } from 'node:http';
import { BadCredentialsError, UnreachableError } from './errors';
import { LyrionClient, mapLyrionTitle } from './lyrion';
import { collectPages, sendJson, type RecordedRequest, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

type Cmd = Array<string | number>;
interface Rpc { id: number; method: string; params: [string, Cmd] }

const rpcOf = (req: RecordedRequest): Rpc => JSON.parse(req.body) as Rpc;
const reply = (res: ServerResponse, req: RecordedRequest, result: unknown): void => {
  const body = rpcOf(req);
  sendJson(res, { id: body.id, method: body.method, params: body.params, result });
};

function title(i: number, dir: string): Record<string, unknown> {
  return {
    id: i, title: `T${i}`, artist: 'Basil', artist_id: 12, albumartist: 'Basil', album: 'OST', album_id: 7,
    duration: 136.93387755102, year: 1990, url: `file://${dir}/Ancestral%20Aid%20${i}.mp3`, rating: 80, playcount: 3,
  };
}

/** LMS stub whose `titles` serves `n` tracks, alternating between /music/rock and /music/rockabilly. */
function lms(n: number, extra?: (cmd: Cmd, player: string, req: RecordedRequest, res: ServerResponse) => boolean) {
  return (req: RecordedRequest, res: ServerResponse): void => {
    if (req.path !== '/jsonrpc.js' || req.method !== 'POST') return sendJson(res, {}, 404);
    const { params } = rpcOf(req);
    const [player, cmd] = params;
    if (extra?.(cmd, player, req, res)) return;
    if (cmd[0] === 'titles') {
      const start = Number(cmd[1]);
      const count = Number(cmd[2]);
      const loop = [];
      for (let i = start; i < Math.min(n, start + count); i++) loop.push(title(i, i % 2 ? '/music/rockabilly' : '/music/rock'));
      return reply(res, req, { count: n, titles_loop: loop });
    }
    // LMS closes the connection on commands it cannot dispatch.
    res.socket?.destroy();
  };
}

describe(LyrionClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();
  const make = (url: string, musicLibraries?: string[], creds: Record<string, string> = {}, mode?: 'player' | 'edit'): LyrionClient =>
    new LyrionClient({ type: 'lyrion', creds: { url, ...creds }, musicLibraries }, { retries: 1, backoffMs: 1, lyrionPlaylistMode: mode });

  it('When enumerating 1100 tracks, then titles is paged 500 at a time through slim.request until start >= count', async () => {
    stub = await startStub(lms(1100));
    const tracks = await collectPages(make(stub.url).iterateTracks());
    expect(tracks).toHaveLength(1100);
    const bodies = stub.requests.map(rpcOf);
    expect(bodies.map((b) => b.params[1].slice(0, 3))).toEqual([['titles', 0, 500], ['titles', 500, 500], ['titles', 1000, 500]]);
    expect(bodies[0]).toEqual({ id: 1, method: 'slim.request', params: ['', ['titles', 0, 500, 'tags:asleduyROAf']] });
    expect(stub.requests[0]?.headers['content-type']).toBe('application/json');
    expect(stub.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('When mapping a title, then the url is decoded once, rating 0-100 becomes stars and ids are strings', () => {
    expect(mapLyrionTitle(title(55, '/music/OST') as never)).toEqual({
      id: '55', title: 'T55', artist: 'Basil', artistId: '12', album: 'OST', albumId: '7', albumArtist: 'Basil', year: 1990,
      rating: 4, durationSeconds: 136.93387755102, path: '/music/OST/Ancestral Aid 55.mp3', playCount: 3,
    });
    expect(mapLyrionTitle({ id: 9, title: 'x', url: 'spotify://track:abc' })).toBeUndefined();
  });

  it('When a path-prefix filter is set, then only tracks under it are kept (separator boundary respected)', async () => {
    stub = await startStub(lms(10));
    const tracks = await collectPages(make(stub.url, ['file:///music/rock/']).iterateTracks());
    expect(tracks.map((t) => t.id)).toEqual(['0', '2', '4', '6', '8']);
    expect(tracks.every((t) => t.path?.startsWith('/music/rock/'))).toBe(true);
  });

  it('When Basic auth is configured, then every request carries it; a 401 maps to BadCredentialsError', async () => {
    stub = await startStub((req, res) => {
      if (req.headers.authorization !== `Basic ${Buffer.from('admin:pw').toString('base64')}`) return sendJson(res, {}, 401);
      return lms(1)(req, res);
    });
    await expect(collectPages(make(stub.url, undefined, { user: 'admin', password: 'pw' }).iterateTracks())).resolves.toHaveLength(1);
    await expect(collectPages(make(stub.url, undefined, { user: 'admin', password: 'bad' }).iterateTracks())).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When LMS closes the connection (unknown command), then UnreachableError after the retry', async () => {
    stub = await startStub(lms(0));
    await expect(make(stub.url).listArtists()).rejects.toBeInstanceOf(UnreachableError);
    expect(stub.requests).toHaveLength(2);
  });

  it('When a titles page fails mid-enumeration, then iterateTracks throws', async () => {
    stub = await startStub(lms(1500, (cmd, _p, _req, res) => {
      if (cmd[0] === 'titles' && cmd[1] === 1000) {
        sendJson(res, {}, 500);
        return true;
      }
      return false;
    }));
    await expect(collectPages(make(stub.url).iterateTracks())).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When listing libraries, then media folders become decoded path ids', async () => {
    stub = await startStub(lms(0, (cmd, _p, req, res) => {
      if (cmd[0] !== 'musicfolder') return false;
      reply(res, req, { count: 3, folder_loop: [
        { id: 101, filename: 'rock', type: 'folder', url: 'file:///music/rock' },
        { id: 102, filename: 'Hip Hop', type: 'folder', url: 'file:///music/Hip%20Hop' },
        { id: 103, filename: 'x.mp3', type: 'track', url: 'file:///music/x.mp3' },
      ] });
      return true;
    }));
    await expect(make(stub.url).listLibraries()).resolves.toEqual([
      { id: '/music/rock', name: 'rock', path: '/music/rock' },
      { id: '/music/Hip Hop', name: 'Hip Hop', path: '/music/Hip Hop' },
    ]);
    expect(rpcOf(stub.requests[0]!).params[1]).toEqual(['musicfolder', 0, 999, 'tags:u']);
  });

  it('When creating a playlist with a player, then new -> load -> add in batches of 50 -> delete placeholder -> save', async () => {
    const calls: Array<[string, Cmd]> = [];
    stub = await startStub(lms(0, (cmd, player, req, res) => {
      calls.push([player, cmd]);
      if (cmd[0] === 'playlists' && cmd[1] === 'new') reply(res, req, { playlist_id: 345 });
      else if (cmd[0] === 'players') reply(res, req, { count: 1, players_loop: [{ playerid: 'aa:bb:cc:dd:ee:ff', name: 'Kitchen' }] });
      else if (cmd[0] === 'playlist' && cmd[1] === 'save') reply(res, req, { __playlist_id: 346 });
      else reply(res, req, {});
      return true;
    }));
    const ids = Array.from({ length: 120 }, (_, i) => String(i + 1));
    await expect(make(stub.url, undefined, {}, 'player').createPlaylist('Mix', ids)).resolves.toEqual({ id: '346', name: 'Mix', trackCount: 120 });
    const P = 'aa:bb:cc:dd:ee:ff';
    expect(calls).toEqual([
      ['', ['playlists', 'new', 'name:Mix']],
      ['', ['players', 0, 1]],
      [P, ['playlistcontrol', 'cmd:load', 'playlist_id:345']],
      [P, ['playlistcontrol', 'cmd:add', `track_id:${ids.slice(0, 50).join(',')}`]],
      [P, ['playlistcontrol', 'cmd:add', `track_id:${ids.slice(50, 100).join(',')}`]],
      [P, ['playlistcontrol', 'cmd:add', `track_id:${ids.slice(100).join(',')}`]],
      ['', ['playlists', 'delete', 'playlist_id:345']],
      [P, ['playlist', 'save', 'Mix', 'silent:1']],
    ]);
  });

  it('When the name exists (overwritten_playlist_id) and no player is connected, then the old list is deleted and tracks added by url', async () => {
    const calls: Cmd[] = [];
    let news = 0;
    stub = await startStub(lms(0, (cmd, _player, req, res) => {
      calls.push(cmd);
      if (cmd[0] === 'playlists' && cmd[1] === 'new') reply(res, req, ++news === 1 ? { overwritten_playlist_id: 37 } : { playlist_id: 400 });
      else if (cmd[0] === 'players') reply(res, req, { count: 0 });
      else if (cmd[0] === 'titles') {
        const ids = String(cmd[3]).replace('track_id:', '').split(',');
        reply(res, req, { count: ids.length, titles_loop: ids.map((id) => ({ id: Number(id), title: id, url: `file:///m/${id}.flac` })) });
      } else reply(res, req, {});
      return true;
    }));
    await expect(make(stub.url, undefined, {}, 'player').createPlaylist('Mix', ['5', '6'])).resolves.toEqual({ id: '400', name: 'Mix', trackCount: 2 });
    expect(calls).toEqual([
      ['playlists', 'new', 'name:Mix'],
      ['playlists', 'delete', 'playlist_id:37'],
      ['playlists', 'new', 'name:Mix'],
      ['players', 0, 1],
      ['titles', 0, 2, 'track_id:5,6', 'tags:u'],
      ['playlists', 'edit', 'cmd:add', 'playlist_id:400', 'url:file:///m/5.flac'],
      ['playlists', 'edit', 'cmd:add', 'playlist_id:400', 'url:file:///m/6.flac'],
    ]);
  });

  it('When the server honours the SQL sort, then history is the sorted answer; otherwise it scans and keeps the top N', async () => {
    const counts = [1, 9, 0, 4, 7];
    let honour = true;
    stub = await startStub(lms(0, (cmd, _p, req, res) => {
      if (cmd[0] !== 'titles') return false;
      const all = counts.map((c, i) => ({ id: i, title: `t${i}`, url: `file:///m/${i}.mp3`, playcount: c }));
      const sort = String(cmd[4] ?? '');
      let loop = all;
      if (honour && sort.endsWith('DESC')) loop = [...all].sort((a, b) => b.playcount - a.playcount);
      if (honour && sort.endsWith('ASC')) loop = [...all].sort((a, b) => a.playcount - b.playcount);
      const start = Number(cmd[1]);
      reply(res, req, { count: all.length, titles_loop: loop.slice(start, start + Number(cmd[2])) });
      return true;
    }));
    await expect(make(stub.url).getListeningHistory(2).then((h) => h.map((t) => t.id))).resolves.toEqual(['1', '4']);
    expect(rpcOf(stub.requests[0]!).params[1][4]).toBe('sort:sql=tracks_persistent.playcount DESC');
    expect(rpcOf(stub.requests[1]!).params[1][4]).toBe('sort:sql=tracks_persistent.playcount ASC');
    expect(stub.requests).toHaveLength(2);
    honour = false;
    // Title order [1, 9, 0, …] is not monotonic: scan.
    await expect(make(stub.url).getListeningHistory(3).then((h) => h.map((t) => t.id))).resolves.toEqual(['1', '4', '3']);
    // Title order [1] alone is monotonic, but ASC starts with the same track: the sort was ignored, scan.
    counts.splice(0, counts.length, 5, 0, 8);
    await expect(make(stub.url).getListeningHistory(1).then((h) => h.map((t) => t.id))).resolves.toEqual(['2']);
  });

  it('When songinfo has lyrics, then they are returned as plain text', async () => {
    stub = await startStub(lms(0, (cmd, _p, req, res) => {
      if (cmd[0] !== 'songinfo') return false;
      reply(res, req, { count: 3, songinfo_loop: [{ id: 55 }, { title: 'x' }, { lyrics: '[00:01.00]first\n[00:02.00]second' }] });
      return true;
    }));
    await expect(make(stub.url).getLyrics('55')).resolves.toBe('first\nsecond');
    expect(rpcOf(stub.requests[0]!).params[1]).toEqual(['songinfo', 0, 100, 'track_id:55', 'tags:w']);
  });

  it('When testing the connection, then serverstatus gives the version and the sample uses file paths', async () => {
    stub = await startStub(lms(3, (cmd, _p, req, res) => {
      if (cmd[0] === 'serverstatus') reply(res, req, { version: '9.0.2', 'info total songs': 3 });
      else if (cmd[0] === 'musicfolder') reply(res, req, { count: 0, folder_loop: [] });
      else return false;
      return true;
    }));
    const r = await make(stub.url).testConnection();
    expect(r).toMatchObject({ ok: true, version: '9.0.2', sampleTrackCount: 3, pathsLookAbsolute: true });
  });
});
