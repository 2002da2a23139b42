/**
 * Peak memory of loading the recording-search postings (issue 33): a `LandmarkIndex` of N synthetic 4-minute songs
 * built as the index service builds a large library's, either in memory and then moved to a file (`toFile`, the way
 * before session 15) or straight into a file (`file` build option: a spill file bucketed by position, one bucket in
 * memory at a time). One mode per process, so each peak RSS (the kernel's `maxRSS`) is that mode's own.
 *
 * Synthetic songs: 2,376 landmarks each (9.9 a second, the real library's stored density, 240 s), hashes drawn
 * from a skewed distribution over the 20-bit space (low hash numbers common, as short narrow peak pairs are in
 * music), frames increasing over 7,500 frames (240 s), seeded per row so both passes and both modes see the same
 * songs. The figure that matters is the peak RSS against the postings' size; accuracy is the recording-search bench's.
 *
 * Usage: node --expose-gc bench/dist/landmarks/postings-build.js [songs=100000] [mode=file|memory] [bufferMiB=32]
 * Prints one JSON line: mode, songs, postings, postings MiB, build ms (wall, synthetic generator included), RSS
 * before the build, peak RSS (maxRSS) and RSS after it, and the bytes the index holds in the process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LandmarkIndex, type Landmarks } from '@polyphony/landmarks';
import { mulberry32 } from '@polyphony/vectors';

const PER_SONG = 2376;
const FRAMES = 7500;

function song(row: number): Landmarks {
  const r = mulberry32(row + 11);
  const hashes = new Uint32Array(PER_SONG);
  const times = new Uint16Array(PER_SONG);
  let t = 0;
  for (let i = 0; i < PER_SONG; i++) {
    hashes[i] = Math.floor((1 << 20) * r() * r());
    t += r() < (PER_SONG / FRAMES) * 2 ? 0 : 1; // about 2 landmarks a frame where there are any: anchors share frames
    times[i] = Math.min(t, FRAMES - 1);
  }
  return { hashes, times };
}

function main(): void {
  const songs = Number(process.argv[2] ?? 100000);
  const mode = process.argv[3] ?? 'file';
  const bufferMiB = Number(process.argv[4] ?? 32);
  if (!Number.isInteger(songs) || songs < 1 || (mode !== 'file' && mode !== 'memory')) throw new Error('usage: postings-build.js [songs] [file|memory] [bufferMiB]');
  const dir = mkdtempSync(path.join(tmpdir(), 'postings-build-'));
  const mib = (b: number) => +(b / 2 ** 20).toFixed(1);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssBefore = mib(process.memoryUsage().rss);
  const source = function* (): Iterable<readonly [number, Landmarks]> {
    for (let row = 0; row < songs; row++) yield [row, song(row)] as const;
  };
  const t0 = Date.now();
  let index = LandmarkIndex.build(source, mode === 'file' ? { file: { dir, aboveBytes: 0, bufferBytes: bufferMiB * 2 ** 20 } } : {});
  if (index.resident) index = index.toFile(dir);
  const buildMs = Date.now() - t0;
  gc?.();
  const out = {
    mode: mode === 'file' ? `straight to a file (${bufferMiB} MiB buckets)` : 'in memory, then toFile',
    songs,
    postings: index.size,
    postingsMiB: mib(index.size * 4),
    buildMs,
    rssBeforeMiB: rssBefore,
    peakRssMiB: +(process.resourceUsage().maxRSS / 1024).toFixed(1),
    rssAfterMiB: mib(process.memoryUsage().rss),
    indexBytesInProcessMiB: mib(index.bytes),
  };
  index.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out));
}

main();
