/**
 * Calibration of the Chromaprint gate (CHROMAPRINT_MATCH_THRESHOLD) on real audio.
 *
 * For every audio file in the given folders (default: the Wesnoth Ogg tracks of Debian package
 * wesnoth-1.16-music), three copies of the same recording are made with ffmpeg: MP3 128 kbit/s, Opus
 * 64 kbit/s, and the original with 0.5 s of silence prepended (an offset the alignment must find only
 * partially: 0.5 s = ~4 items). Each copy is compared with the original (same recording), and every
 * original with every other original (different recordings), with chromaprintAlignment at the
 * configured offsets. Prints the distributions and the margin around the threshold.
 *
 * Run: npm run build && node bench/dist/catalogue-identity/chromaprint-calibration.js [dir...]
 * Needs ffmpeg and fpcalc on PATH. Takes about 5.5 minutes for the 41 Wesnoth tracks on 2 cores.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromaprintAlignment } from '@polyphony/vectors';
import { parseFpcalcRaw, CHROMAPRINT_MATCH_THRESHOLD, CHROMAPRINT_MAX_ALIGN_OFFSET, CHROMAPRINT_MIN_OVERLAP } from '@polyphony/catalogue-identity/identity';

const AUDIO = /\.(ogg|mp3|flac|m4a|opus|wav)$/i;

/** fpcalc exits non-zero (3) on a trailing decode error while still printing a valid print, so judge by the output. */
function fingerprint(path: string): Int32Array {
  const run = spawnSync('fpcalc', ['-raw', path], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (!run.stdout.includes('FINGERPRINT=')) throw new Error(`fpcalc failed on ${path}: ${run.stderr}`);
  return parseFpcalcRaw(run.stdout);
}

function ffmpeg(args: string[]): void {
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args]);
}

/** Quantiles of the comparable values; abstentions (NaN: too little overlap) are counted apart. */
function quantiles(all: number[]): string {
  const xs = all.filter((x) => !Number.isNaN(x));
  const abstained = all.length - xs.length;
  if (xs.length === 0) return `n=0 abstained=${abstained}`;
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number): number => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))] as number;
  return `n=${s.length} abstained=${abstained} min=${q(0).toFixed(4)} p01=${q(0.01).toFixed(4)} p50=${q(0.5).toFixed(4)} p99=${q(0.99).toFixed(4)} max=${q(1).toFixed(4)}`;
}

function main(): void {
  const dirs = process.argv.slice(2);
  if (dirs.length === 0) dirs.push('/usr/share/games/wesnoth/1.16/data/core/music');
  const files = dirs.flatMap((d) => readdirSync(d).filter((f) => AUDIO.test(f)).map((f) => join(d, f))).sort();
  const work = mkdtempSync(join(tmpdir(), 'chromaprint-cal-'));
  const options = { maxOffset: CHROMAPRINT_MAX_ALIGN_OFFSET, minOverlap: CHROMAPRINT_MIN_OVERLAP };
  const same: Record<string, number[]> = { mp3_128k: [], opus_64k: [], delay_0_5s: [] };
  const originals: Int32Array[] = [];
  const started = Date.now();
  try {
    files.forEach((file, i) => {
      const fp = fingerprint(file);
      originals.push(fp);
      const variants: [string, string[]][] = [
        ['mp3_128k', ['-i', file, '-t', '130', '-c:a', 'libmp3lame', '-b:a', '128k', join(work, `${i}.mp3`)]],
        ['opus_64k', ['-i', file, '-t', '130', '-c:a', 'libopus', '-b:a', '64k', join(work, `${i}.opus`)]],
        ['delay_0_5s', ['-i', file, '-t', '130', '-af', 'adelay=500:all=1', '-c:a', 'flac', join(work, `${i}.flac`)]],
      ];
      for (const [name, args] of variants) {
        ffmpeg(args);
        const out = args[args.length - 1] as string;
        const m = chromaprintAlignment(fp, fingerprint(out), options);
        (same[name] as number[]).push(m ? m.similarity : NaN);
      }
    });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const different: number[] = [];
  for (let i = 0; i < originals.length; i++) {
    for (let j = i + 1; j < originals.length; j++) {
      const m = chromaprintAlignment(originals[i] as Int32Array, originals[j] as Int32Array, options);
      if (m) different.push(m.similarity);
    }
  }
  const allSame = Object.values(same).flat().filter((x) => !Number.isNaN(x));
  console.log(`chromaprint calibration: ${files.length} tracks, offsets +-${options.maxOffset}, min overlap ${options.minOverlap}, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const [name, xs] of Object.entries(same)) console.log(`  same recording, ${name.padEnd(10)} ${quantiles(xs)}`);
  console.log(`  different recordings     ${quantiles(different)}`);
  const minSame = Math.min(...allSame);
  const maxDiff = Math.max(...different);
  console.log(`  threshold ${CHROMAPRINT_MATCH_THRESHOLD}: same below it ${allSame.filter((x) => x < CHROMAPRINT_MATCH_THRESHOLD).length}/${allSame.length}, different at/above it ${different.filter((x) => x >= CHROMAPRINT_MATCH_THRESHOLD).length}/${different.length}`);
  console.log(`  gap: lowest same ${minSame.toFixed(4)} vs highest different ${maxDiff.toFixed(4)}`);
}

main();
