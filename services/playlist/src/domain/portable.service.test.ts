import { createHash } from 'node:crypto';
import { streamUrl, toM3u8, type PlaylistExport } from './portable.service';

describe('streamUrl: a stream link per server kind, credentials only when asked', () => {
  const creds = { url: 'https://music.example/base/', user: 'ann', password: 'pw-1', token: 'tok-2', api_key: undefined };

  it('When no credential is asked for, then no kind puts one in the URL', () => {
    expect(streamUrl('navidrome', creds, 'a b', false)).toBe('https://music.example/base/rest/stream?id=a+b&v=1.16.1&c=polyphony');
    expect(streamUrl('jellyfin', creds, 'abc', false)).toBe('https://music.example/base/Audio/abc/stream?static=true');
    expect(streamUrl('emby', { url: 'http://e:8096/emby' }, 'abc', false)).toBe('http://e:8096/emby/Audio/abc/stream?static=true');
    expect(streamUrl('plex', creds, '123', false)).toBe('https://music.example/base/music/:/transcode/universal/start.mp3?path=%2Flibrary%2Fmetadata%2F123&protocol=http&mediaIndex=0&partIndex=0');
    expect(streamUrl('lyrion', creds, '7', false)).toBe('https://music.example/base/music/7/download');
  });

  it('When credentials are embedded, then Subsonic gets a salted token (never the password) or its API key, Jellyfin/Emby api_key and Plex X-Plex-Token', () => {
    const sub = new URL(streamUrl('navidrome', creds, 'x', true)).searchParams;
    expect(sub.get('u')).toBe('ann');
    expect(sub.get('t')).toBe(createHash('md5').update(`pw-1${sub.get('s')}`).digest('hex'));
    expect(sub.get('p')).toBeNull();
    expect(new URL(streamUrl('navidrome', { url: 'http://n', api_key: 'k-3' }, 'x', true)).searchParams.get('apiKey')).toBe('k-3');
    expect(new URL(streamUrl('jellyfin', creds, 'x', true)).searchParams.get('api_key')).toBe('tok-2');
    expect(new URL(streamUrl('plex', creds, 'x', true)).searchParams.get('X-Plex-Token')).toBe('tok-2');
  });
});

describe('toM3u8', () => {
  const base: PlaylistExport = {
    format: 'polyphony-playlist', version: 1, name: 'Mix', server_id: 's', server_name: 'S', server_type: 'jellyfin', exported_at: '2026-12-04T00:00:00.000Z', credentials_embedded: false, unavailable_ids: [],
    tracks: [
      { item_id: 'i1', provider_id: 'p1', title: 'One', artist: 'A', album: null, duration_seconds: 61.6, path: '/m/one.flac', stream_url: 'http://s/1' },
      { item_id: 'i2', provider_id: 'p2', title: 'Two\r\nlines', artist: '', album: null, duration_seconds: null, path: null, stream_url: 'http://s/2' },
    ],
  };

  it('When locations are auto, path or stream, then each song gets its path, the stream URL, or is left out and counted', () => {
    expect(toM3u8(base, 'auto')).toBe('#EXTM3U\n#PLAYLIST:Mix\n#EXTINF:62,A - One\n/m/one.flac\n#EXTINF:-1,Two lines\nhttp://s/2\n');
    expect(toM3u8(base, 'stream')).toBe('#EXTM3U\n#PLAYLIST:Mix\n#EXTINF:62,A - One\nhttp://s/1\n#EXTINF:-1,Two lines\nhttp://s/2\n');
    expect(toM3u8(base, 'path')).toBe('#EXTM3U\n#PLAYLIST:Mix\n#EXTINF:62,A - One\n/m/one.flac\n#EXT-X-POLYPHONY-MISSING:1\n');
  });
});
