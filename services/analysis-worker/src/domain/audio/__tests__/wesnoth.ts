/**
 * Real-music fixtures for the audio integration tests: Wesnoth 1.16 tracks from the Debian package
 * wesnoth-1.16-music (installed on CI and dev machines, see shared/docs) and ffmpeg transcodes of them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const WESNOTH_MUSIC_DIR = '/usr/share/games/wesnoth/1.16/data/core/music';

/** Absolute path of a Wesnoth track; throws when the package is missing so the failure says why. */
export function wesnoth(stem: string): string {
  const path = join(WESNOTH_MUSIC_DIR, `${stem}.ogg`);
  if (!existsSync(path)) throw new Error(`${path} missing: install the Debian package wesnoth-1.16-music`);
  return path;
}

/** Duration ffprobe reports for the container, seconds. */
export function ffprobeDuration(path: string): number {
  const r = spawnSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ffprobe failed: ${r.stderr}`);
  return Number(r.stdout.trim());
}

/** Transcodes `source` to `target` with the given ffmpeg output options (synchronous). */
export function transcode(source: string, target: string, options: string[], inputOptions: string[] = []): string {
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-y', ...inputOptions, '-i', source, '-vn', ...options, target], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ffmpeg failed: ${r.stderr}`);
  return target;
}
