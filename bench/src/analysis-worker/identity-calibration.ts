/**
 * Calibration of the catalogue identity thresholds (DUPLICATE_DISTANCE_THRESHOLD_COSINE,
 * DURATION_TOLERANCE_SECONDS) for the default embedder.
 *
 * For every Wesnoth track (41 Ogg Vorbis files), ffmpeg writes five copies into a scratch directory:
 *   mp3  (libmp3lame 128 kbit/s), m4a (ffmpeg aac 128 kbit/s), opus (libopus 96 kbit/s), flac (lossless),
 *   trim (the first 1.5 s cut off, stored as flac so only the cut differs).
 * All files are decoded (16 kHz mono) and embedded. The script prints
 *   - cosine distance original -> copy, per format and overall (max, p95, median),
 *   - cosine distance between DIFFERENT tracks (min, p1, the 10 closest pairs, and the near-twins
 *     victory/victory2, defeat/defeat2, frantic/frantic-old),
 *   - decoded duration difference original -> copy per format,
 *   - Hamming distance of the 200-bit content signatures (bit d set when x_d > mean(x)) original -> copy,
 *     and between different tracks (the catalogue proposes candidates within 10 bits),
 *   - Chromaprint agreement (best alignment, chromaprint.ts) original -> copy and between different tracks,
 * and recommends thresholds with their margins. Copies are cached between runs.
 *
 * Run: npm run build && node bench/dist/analysis-worker/identity-calibration.js
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeChromaprint, FrameAnalyser, decodeToPcm, dspV1RawFeatures, DefaultEmbedder } from '@polyphony/analysis-worker/engine';
import { chromaprintSimilarity, cosineDistance } from '@polyphony/vectors';
import { BENCH_SCRATCH_DIR, wesnothTracks } from './corpus';

export interface Variant {
  name: string;
  ext: string;
  args: string[];
}

/** Encodings of one original, in print order. */
export const VARIANTS: Variant[] = [
  { name: 'mp3', ext: 'mp3', args: ['-c:a', 'libmp3lame', '-b:a', '128k'] },
  { name: 'm4a', ext: 'm4a', args: ['-c:a', 'aac', '-b:a', '128k'] },
  { name: 'opus', ext: 'opus', args: ['-c:a', 'libopus', '-b:a', '96k'] },
  { name: 'flac', ext: 'flac', args: ['-c:a', 'flac'] },
  { name: 'trim', ext: 'flac', args: ['-ss', '1.5', '-c:a', 'flac'] },
];
const TRIM_SECONDS = 1.5;
const NEAR_TWINS: Array<[string, string]> = [
  ['victory', 'victory2'],
  ['defeat', 'defeat2'],
  ['frantic', 'frantic-old'],
];

export function transcode(source: string, target: string, variant: Variant): void {
  if (existsSync(target)) return;
  const tmp = `${target}.part.${variant.ext}`;
  // -ss before -i seeks the input; for the other variants args only hold codec options.
  const seek = variant.args[0] === '-ss' ? variant.args.slice(0, 2) : [];
  const codec = variant.args[0] === '-ss' ? variant.args.slice(2) : variant.args;
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-y', ...seek, '-i', source, '-vn', '-map_metadata', '-1', ...codec, tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`ffmpeg ${variant.name} ${source}: ${r.stderr.toString()}`);
  renameSync(tmp, target);
}

/** 200-bit signature of the reference implementation: bit d = x_d > mean(x), float64. */
export function signatureBits(x: ArrayLike<number>): Uint8Array {
  let mean = 0;
  for (let i = 0; i < x.length; i++) mean += x[i]!;
  mean /= x.length;
  const bits = new Uint8Array(x.length);
  for (let i = 0; i < x.length; i++) bits[i] = x[i]! - mean > 0 ? 1 : 0;
  return bits;
}

export function hamming(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i] === b[i] ? 0 : 1;
  return d;
}

export function quantile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const pos = (s.length - 1) * q;
  const i = Math.floor(pos);
  return i + 1 < s.length ? s[i]! + (s[i + 1]! - s[i]!) * (pos - i) : s[i]!;
}

export function summary(values: number[], digits = 5): string {
  return `min ${Math.min(...values).toFixed(digits)}  median ${quantile(values, 0.5).toFixed(digits)}  p95 ${quantile(values, 0.95).toFixed(digits)}  max ${Math.max(...values).toFixed(digits)}`;
}

interface Embedded {
  name: string;
  raw: Float64Array;
  embedding: Float32Array;
  duration: number;
  signature: Uint8Array;
  print: Uint32Array | null;
}

const analyser = new FrameAnalyser();

async function embedFile(embedder: DefaultEmbedder, name: string, path: string): Promise<Embedded> {
  const pcm = await decodeToPcm(path);
  // Same as embedder.embed(), keeping the raw descriptor for the dump below.
  const raw = dspV1RawFeatures(analyser.analyse(pcm.samples, pcm.sampleRate));
  const embedding = embedder.normalise(raw);
  let print: Uint32Array | null = null;
  try {
    print = (await computeChromaprint(path)).fingerprint;
  } catch {
    print = null;
  }
  return { name, raw, embedding, duration: pcm.durationSeconds, signature: signatureBits(embedding), print };
}

async function main(): Promise<void> {
  const dir = join(BENCH_SCRATCH_DIR, 'transcodes');
  mkdirSync(dir, { recursive: true });
  const embedder = new DefaultEmbedder();
  const tracks = wesnothTracks();
  process.stdout.write(`identity calibration: ${tracks.length} Wesnoth tracks x ${VARIANTS.length} copies, embedder ${embedder.version}\n`);

  const originals: Embedded[] = [];
  const copies = new Map<string, Embedded[]>(); // variant -> per track
  for (const v of VARIANTS) copies.set(v.name, []);
  for (const [i, t] of tracks.entries()) {
    const stem = t.name.split('/')[1]!;
    originals.push(await embedFile(embedder, stem, t.path));
    for (const v of VARIANTS) {
      const target = join(dir, `${stem}.${v.name}.${v.ext}`);
      transcode(t.path, target, v);
      copies.get(v.name)!.push(await embedFile(embedder, stem, target));
    }
    process.stderr.write(`[${i + 1}/${tracks.length}] ${stem}\n`);
  }

  const dump = join(BENCH_SCRATCH_DIR, 'identity-calibration-raw.json');
  writeFileSync(
    dump,
    JSON.stringify({
      originals: originals.map((o) => ({ name: o.name, duration: o.duration, raw: Array.from(o.raw) })),
      copies: Object.fromEntries([...copies.entries()].map(([k, list]) => [k, list.map((o) => ({ name: o.name, duration: o.duration, raw: Array.from(o.raw) }))])),
    }),
  );
  process.stdout.write(`raw descriptors written to ${dump}\n`);

  // Same song, other encoding.
  const sameCos: number[] = [];
  const sameCosNoTrim: number[] = [];
  const trimCosLong: number[] = [];
  const sameHam: number[] = [];
  const durDelta: number[] = [];
  const samePrint: number[] = [];
  process.stdout.write('\n== original -> copy (same song) ==\n');
  for (const v of VARIANTS) {
    const list = copies.get(v.name)!;
    const cos = list.map((c, i) => cosineDistance(originals[i]!.embedding, c.embedding));
    const ham = list.map((c, i) => hamming(originals[i]!.signature, c.signature));
    const dd = list.map((c, i) => c.duration - originals[i]!.duration);
    const fp = list.map((c, i) => (c.print && originals[i]!.print ? chromaprintSimilarity(originals[i]!.print!, c.print) : null)).filter((x): x is number => x !== null);
    const worst = cos.indexOf(Math.max(...cos));
    process.stdout.write(`${v.name.padEnd(5)} cosine   ${summary(cos)}   (worst: ${list[worst]!.name})\n`);
    const over = list.filter((_, i) => ham[i]! > 10).map((c) => c.name);
    process.stdout.write(`${''.padEnd(5)} hamming  ${summary(ham, 0)}   (> 10 bits: ${over.length}/${list.length}${over.length > 0 ? `: ${over.join(', ')}` : ''})\n`);
    process.stdout.write(`${''.padEnd(5)} duration delta s  ${summary(dd, 4)}\n`);
    if (fp.length > 0) process.stdout.write(`${''.padEnd(5)} chromaprint ${summary(fp, 4)}\n`);
    sameCos.push(...cos);
    sameHam.push(...ham);
    samePrint.push(...fp);
    if (v.name !== 'trim') {
      sameCosNoTrim.push(...cos);
      durDelta.push(...dd.map(Math.abs));
    } else {
      trimCosLong.push(...cos.filter((_, i) => originals[i]!.duration >= 30));
    }
  }

  // Different songs.
  const pairs: Array<{ a: string; b: string; cos: number; ham: number; fp: number | null; dd: number }> = [];
  for (let i = 0; i < originals.length; i++) {
    for (let j = i + 1; j < originals.length; j++) {
      const a = originals[i]!;
      const b = originals[j]!;
      pairs.push({
        a: a.name,
        b: b.name,
        cos: cosineDistance(a.embedding, b.embedding),
        ham: hamming(a.signature, b.signature),
        fp: a.print && b.print ? chromaprintSimilarity(a.print, b.print) : null,
        dd: Math.abs(a.duration - b.duration),
      });
    }
  }
  pairs.sort((x, y) => x.cos - y.cos);
  const diffCos = pairs.map((p) => p.cos);
  process.stdout.write(`\n== different songs (${pairs.length} pairs) ==\n`);
  process.stdout.write(`cosine   ${summary(diffCos)}  p1 ${quantile(diffCos, 0.01).toFixed(5)}\n`);
  process.stdout.write(`hamming  ${summary(pairs.map((p) => p.ham), 0)}  (pairs within 10 bits: ${pairs.filter((p) => p.ham <= 10).length})\n`);
  const diffPrint = pairs.map((p) => p.fp).filter((x): x is number => x !== null);
  if (diffPrint.length > 0) process.stdout.write(`chromaprint ${summary(diffPrint, 4)}\n`);
  process.stdout.write('closest pairs:\n');
  for (const p of pairs.slice(0, 10)) {
    process.stdout.write(`  ${p.a} / ${p.b}: cosine ${p.cos.toFixed(5)}, hamming ${p.ham}, chromaprint ${p.fp?.toFixed(3) ?? 'n/a'}, |dDuration| ${p.dd.toFixed(2)} s\n`);
  }
  process.stdout.write('near-twins:\n');
  for (const [x, y] of NEAR_TWINS) {
    const p = pairs.find((q) => (q.a === x && q.b === y) || (q.a === y && q.b === x));
    if (p) process.stdout.write(`  ${x} / ${y}: cosine ${p.cos.toFixed(5)}, hamming ${p.ham}, chromaprint ${p.fp?.toFixed(3) ?? 'n/a'}, |dDuration| ${p.dd.toFixed(2)} s\n`);
  }

  // Recommendation. The threshold separates re-encodings (same audio, other codec) from different songs; a copy
  // cut by 1.5 s is split by the duration check anyway (1.5 s > DURATION_TOLERANCE_SECONDS), so trims only
  // inform, and for short tracks a 1.5 s cut removes a large share of the music.
  const maxSame = Math.max(...sameCosNoTrim);
  const minDiff = Math.min(...diffCos);
  process.stdout.write('\n== recommendation ==\n');
  process.stdout.write(`max re-encoding cosine distance: ${maxSame.toFixed(5)}; min different-song: ${minDiff.toFixed(5)}\n`);
  if (maxSame < minDiff) {
    // Geometric mean of the two edges: equal multiplicative margin on both sides.
    const threshold = Number(Math.sqrt(maxSame * minDiff).toPrecision(2));
    const trimsInside = trimCosLong.filter((d) => d <= threshold).length;
    process.stdout.write(
      `DUPLICATE_DISTANCE_THRESHOLD_COSINE = ${threshold}  (x${(threshold / maxSame).toFixed(1)} above the worst re-encoding, x${(minDiff / threshold).toFixed(1)} below the closest different song)\n` +
        `trimmed copies of tracks >= 30 s within that distance: ${trimsInside}/${trimCosLong.length} (max ${Math.max(...trimCosLong).toFixed(5)})\n`,
    );
  } else {
    process.stdout.write('re-encodings and different songs OVERLAP in cosine distance: the embedding alone cannot separate them\n');
  }
  const maxDur = Math.max(...durDelta);
  process.stdout.write(
    `max |duration delta| of re-encodings: ${maxDur.toFixed(4)} s; the trimmed copy differs by ${TRIM_SECONDS} s.\n` +
      `DURATION_TOLERANCE_SECONDS = 1.0 keeps a x${(1 / Math.max(maxDur, 1e-3)).toFixed(0)} margin over codec padding and splits copies cut by more than 1 s (a false split is harmless).\n`,
  );
  process.stdout.write(`max same-song signature Hamming distance: ${Math.max(...sameHam)} bits (catalogue candidate search tolerates 10)\n`);
  if (samePrint.length > 0) process.stdout.write(`min same-song chromaprint agreement: ${Math.min(...samePrint).toFixed(4)} (gate 0.95); max different-song: ${Math.max(...diffPrint).toFixed(4)}\n`);
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
