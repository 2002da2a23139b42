/**
 * NavidromeClient against a REAL Subsonic-API server: Debian's supysonic (API 1.10.2) serving the
 * 41 Wesnoth Ogg Vorbis files. Checks interoperability beyond the Navidrome flavour: supysonic
 * has no token auth (only `p`), returns no playlist from `createPlaylist`, types
 * `musicFolder.id` as a string and reports paths relative to the folder.
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { WESNOTH_MUSIC_DIR, startSupysonic, wesnothTracks, type StartedSupysonic } from '@polyphony/testkit';
import { BadCredentialsError } from '../src/errors';
import { createMediaServerClient } from '../src/factory';
import type { MediaServerClient, ProviderTrack } from '../src/types';
import { TEST_CLIENT_OPTIONS, collectPages, tempDir } from './helpers';

jest.setTimeout(120_000);

describe('NavidromeClient against a real supysonic', () => {
  const wesnoth = wesnothTracks();
  const byFile = new Map([...wesnoth].map((t) => [basename(t.audioFile), t]));
  let sup: StartedSupysonic;
  let tracks: ProviderTrack[] = [];

  const client = (password = 'sesame-42'): MediaServerClient =>
    createMediaServerClient({ type: 'navidrome', creds: { url: sup.url, user: 'alice', password } }, TEST_CLIENT_OPTIONS);

  beforeAll(async () => {
    sup = await startSupysonic({ musicDir: WESNOTH_MUSIC_DIR, user: 'alice', password: 'sesame-42' });
  });
  afterAll(async () => {
    await sup?.close();
  });

  it('When the password is right, then testConnection is ok and lists the music folder', async () => {
    const r = await client().testConnection();
    expect(r.message).toBeUndefined();
    expect(r.ok).toBe(true);
    expect(r.libraries).toEqual([{ id: '1', name: 'Music' }]);
    expect(r.sampleTrackCount).toBe(41);
  });

  it('When the password is wrong, then calls throw BadCredentialsError', async () => {
    await expect(client('wrong-password').listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
    const r = await client('wrong-password').testConnection();
    expect(r.errorKind).toBe('bad_credentials');
  });

  it('When the catalogue is enumerated, then all 41 files arrive with their tags and whole-second durations', async () => {
    tracks = (await collectPages(client().iterateTracks())).items;
    expect(tracks).toHaveLength(41);
    expect(new Set(tracks.map((t) => t.id)).size).toBe(41);
    for (const got of tracks) {
      const t = byFile.get(basename(got.path ?? ''));
      expect(t).toBeDefined();
      if (!t) continue;
      // supysonic truncates to whole seconds
      expect(got.durationSeconds).toBe(Math.trunc(t.durationSeconds));
      if (t.title !== undefined && !t.id.endsWith('silence')) expect(got.title).toBe(t.title);
      if (t.artist !== 'Wesnoth') expect(got.artist).toBe(t.artist);
      if (t.year !== undefined) expect(got.year).toBe(t.year);
    }
    expect(new Set(tracks.map((t) => basename(t.path ?? '')))).toEqual(new Set(byFile.keys()));
  });

  it('When the newest albums are asked (getAlbumList2 newest + getAlbum), then one album gives its own tracks and a large limit every track', async () => {
    const one = (await collectPages(client().iterateRecentAlbumTracks(1))).items;
    expect(one.length).toBeGreaterThan(0);
    expect(one[0]!.albumId).toBeDefined();
    expect(new Set(one.map((t) => t.albumId)).size).toBe(1);
    const all = tracks.length ? tracks : (await collectPages(client().iterateTracks())).items;
    expect(one.length).toBe(all.filter((t) => t.albumId === one[0]!.albumId).length);
    expect(one.length).toBeLessThan(all.length); // the Wesnoth set is two albums (39 + 2 files)
    const everything = (await collectPages(client().iterateRecentAlbumTracks(10_000))).items;
    expect(everything.map((t) => t.id).sort()).toEqual(all.map((t) => t.id).sort());
  });

  it('When a track is downloaded, then the bytes equal the file on disk', async () => {
    const got = tracks.find((t) => basename(t.path ?? '') === 'knolls.ogg');
    expect(got).toBeDefined();
    const { dir, cleanup } = await tempDir();
    try {
      const dest = join(dir, 'knolls.ogg');
      const n = await client().downloadTrack(got?.id ?? '', dest);
      const [a, b] = await Promise.all([readFile(dest), readFile(join(WESNOTH_MUSIC_DIR, 'knolls.ogg'))]);
      expect(n).toBe(b.length);
      expect(a.equals(b)).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('When a playlist of all 41 tracks is created (two batches), then it is listed with 41 songs and can be deleted', async () => {
    const ids = tracks.map((t) => t.id);
    expect(ids).toHaveLength(41);
    const c = client();
    const pl = await c.createPlaylist('Wesnoth all', ids);
    expect(pl.trackCount).toBe(41);
    const listed = await c.listPlaylists();
    expect(listed).toContainEqual({ id: pl.id, name: 'Wesnoth all', trackCount: 41 });
    await c.deletePlaylist(pl.id);
    expect((await c.listPlaylists()).some((p) => p.id === pl.id)).toBe(false);
  });

  it('When lyrics are asked (supysonic lacks getLyricsBySongId), then the answer is undefined', async () => {
    await expect(client().getLyrics(tracks[0]?.id ?? '')).resolves.toBeUndefined();
  });
});
