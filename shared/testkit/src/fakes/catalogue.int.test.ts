/**
 * The Wesnoth catalogue against the installed Debian package and ffprobe: 41 files, durations
 * and tags read by the Ogg header reader agree with ffprobe's.
 */
import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { readOggVorbisInfo } from './ogg';
import { titleFromFileName, wesnothFiles, wesnothTracks } from './catalogue';

const run = promisify(execFile);

describe('wesnothTracks', () => {
  const cat = wesnothTracks();

  it('When built, then it holds the 41 .ogg files of wesnoth-1.16-music split 39/2 over two libraries', () => {
    expect(cat.size).toBe(41);
    expect(wesnothFiles()).toHaveLength(41);
    expect(cat.indicesIn(['lib-music'])).toHaveLength(39);
    expect(cat.indicesIn(['lib-extras'])).toHaveLength(2);
    expect(new Set([...cat].map((t) => t.id)).size).toBe(41);
    for (const t of cat) {
      const lib = cat.libraries.find((l) => l.id === t.library);
      expect(t.path.startsWith(`${lib?.path}/`)).toBe(true);
      expect(t.path.endsWith(basename(t.audioFile))).toBe(true);
    }
  });

  it('When durations and tags are read from the Ogg headers, then they match ffprobe', async () => {
    const files = wesnothFiles();
    const probes = new Map<string, string>();
    for (let i = 0; i < files.length; i += 8) {
      const batch = files.slice(i, i + 8);
      const outs = await Promise.all(batch.map((f) => run('ffprobe', ['-v', 'error', '-show_entries', 'stream=duration:stream_tags', '-of', 'json', f])));
      batch.forEach((f, k) => probes.set(f, outs[k]?.stdout ?? ''));
    }
    for (const file of files) {
      const stdout = probes.get(file) ?? '';
      const probe = JSON.parse(stdout) as { streams: Array<{ duration: string; tags?: Record<string, string> }> };
      const stream = probe.streams[0];
      const info = readOggVorbisInfo(file);
      expect(Math.abs(info.durationSeconds - Number(stream?.duration))).toBeLessThan(1e-3);
      const ffTags = Object.fromEntries(Object.entries(stream?.tags ?? {}).map(([k, v]) => [k.toUpperCase(), v]));
      expect(info.tags.TITLE).toBe(ffTags.TITLE);
      expect(info.tags.ARTIST).toBe(ffTags.ARTIST);
      expect(info.tags.ALBUM).toBe(ffTags.ALBUM);
      const track = [...cat].find((t) => t.audioFile === file);
      expect(track?.durationSeconds).toBe(info.durationSeconds);
      expect(track?.title).toBe(ffTags.TITLE ?? titleFromFileName(file));
    }
  });
});
