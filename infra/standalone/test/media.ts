import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Directory where transcodes for tests are cached between runs on one machine. */
export const MEDIA_CACHE = process.env.POLYPHONY_TEST_MEDIA ?? '/tmp/polyphony-test-media';

/**
 * Runs ffmpeg writing `out` through a temporary file of this call's own (several jest processes on one
 * machine share the cache: a shared temporary name let one process rename the other's file away), then
 * renames it into place atomically, so a reader never sees a partial file.
 */
async function ffmpegTo(out: string, ext: string, args: string[]): Promise<void> {
  const tmp = `${out}.${process.pid}-${randomBytes(4).toString('hex')}.tmp.${ext}`;
  await run('ffmpeg', [...args, tmp]);
  await rename(tmp, out);
}

/** Transcodes `src` with ffmpeg to `<cache>/<kind>/<basename>.<ext>` once; returns the path. */
export async function transcode(src: string, kind: 'mp3' | 'aac' | 'opus' | 'flac'): Promise<string> {
  const ext = { mp3: 'mp3', aac: 'm4a', opus: 'opus', flac: 'flac' }[kind];
  const args = { mp3: ['-c:a', 'libmp3lame', '-b:a', '128k'], aac: ['-c:a', 'aac', '-b:a', '128k'], opus: ['-c:a', 'libopus', '-b:a', '96k'], flac: ['-c:a', 'flac'] }[kind];
  const dir = path.join(MEDIA_CACHE, kind);
  mkdirSync(dir, { recursive: true });
  const out = path.join(dir, `${path.basename(src, path.extname(src))}.${ext}`);
  if (!existsSync(out)) await ffmpegTo(out, ext, ['-nostdin', '-v', 'error', '-y', '-i', src, '-vn', ...args]);
  return out;
}

/**
 * Makes a distinct synthetic "song" with ffmpeg's lavfi sources (no external audio needed):
 * variant 0 = a chord of sines with tremolo, 1 = filtered noise bursts (percussive), 2 = a sweep.
 */
export async function syntheticSong(variant: 0 | 1 | 2, seconds = 40): Promise<string> {
  const dir = path.join(MEDIA_CACHE, 'synthetic');
  mkdirSync(dir, { recursive: true });
  const out = path.join(dir, `synthetic-${variant}-${seconds}.ogg`);
  if (existsSync(out)) return out;
  const sources = [
    `sine=f=220:d=${seconds},tremolo=f=3:d=0.6[a];sine=f=277:d=${seconds}[b];sine=f=330:d=${seconds}[c];[a][b][c]amix=inputs=3`,
    `anoisesrc=d=${seconds}:c=pink:a=0.5,lowpass=f=900,volume='if(lt(mod(t,0.5),0.08),1,0.05)':eval=frame`,
    `aevalsrc='0.4*sin(2*PI*(200+150*sin(2*PI*0.05*t))*t)':d=${seconds}:s=44100`,
  ];
  await ffmpegTo(out, 'ogg', ['-nostdin', '-v', 'error', '-y', '-filter_complex', sources[variant]!, '-c:a', 'libvorbis', '-q:a', '4']);
  return out;
}

/** Transcodes every file with bounded parallelism (2, the machine's cores). */
export async function transcodeAll(files: string[], kind: 'mp3' | 'aac' | 'opus' | 'flac'): Promise<string[]> {
  const out: string[] = new Array(files.length);
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      while (next < files.length) {
        const i = next++;
        out[i] = await transcode(files[i]!, kind);
      }
    }),
  );
  return out;
}
