/**
 * Search by recording, measured on real music: how often a degraded clip of a library song finds that song
 * first, how often a clip of something outside the library (other music, speech) is wrongly "identified",
 * what a song's fingerprint costs (bytes, CPU), and query latency at scale.
 *
 * Corpus (Debian main, freely licensed): the library is the Wesnoth soundtrack (wesnoth-1.16-music) plus,
 * when installed, drascula-music and warzone2100-music; music outside the library is singularity-music and
 * hyperrogue-music; speech is espeak-ng reading a public-domain text. Missing packages are skipped (printed).
 *
 * Degradations of a clip (issue 33's list; the ones a phone in a room adds): additive pink noise at 10 and 5 dB
 * SNR; a 300-3400 Hz band-pass (4th-order Butterworth-like, two RBJ biquads per edge); room reverberation
 * (synthetic impulse response: direct path plus an exponentially decaying noise tail, RT60 0.5 s, convolved
 * by ffmpeg's afir); 64 kbit/s MP3 (ffmpeg libmp3lame, round trip); a -12 dB level error; +-2 % speed (pitch and
 * tempo together); "10 dB + band-pass" (the issue's goal case) and "phone room" (reverb, band-pass, 10 dB noise
 * and 64 kbit/s together).
 *
 * Scale: `--scale N` adds N synthetic songs whose landmarks are drawn from the library's own hash distribution
 * at the stored density (4-minute songs), so the postings lists have the length a real N-song library gives,
 * and reports index bytes, build time and the latency (p50/p99, one core) and accuracy of the goal case among them.
 *
 * `--scale-variants resident,file,resample` runs the scale clips with the postings in memory, in a file (as the index
 * service holds them), and with the old speed grid (the clip resampled and analysed at every speed), and prints RSS.
 *
 * Latency is the CPU time of each query in this single-threaded process (one core), so a loaded machine
 * does not inflate it. Usage: node bench/dist/landmarks/recording-search.js [--queries 30] [--scale 100000] [--lengths 5,10,20]
 * [--cell-queries "10:noise 10 dB + band-pass=400"] [--outside N] [--speech N] [--outcomes FILE] [--pcm-cache DIR]
 * [--seed 42] (the clip draw) [--variants "storeDt=63,queryDt=63;storePeaks=4,storeFan=4;storeBand=350-3200"] (stored/query
 * density, the stored peaks' band in Hz, the peak neighbourhood, and matcher settings on the same clips; keys in `variant-spec.ts`)
 * [--base SPEC] (the run's own settings in the same keys: the default pass, the variants and the scale pass start from them) [--verify K] (each clip's first K
 * results' peak agreement, `verify.ts`, written to the `--outcomes` file). Every cell is printed twice: `accuracy` counts only the clip's own song as right,
 * `accuracySameRecordingRight` also an answer that holds the clip's material (`same-recording.ts`; its checks and the
 * library's song pairs sharing material are printed under `sameRecording`).
 * Prints JSON: the library-only report, then (with --scale) the scale figures. Decision thresholds: the table `thresholds` shows accuracy and wrong answers for other
 * (minVotes, minLead) pairs, from the same queries.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { changeSpeed, encodeLandmarks, extractLandmarks, extractPeaks, FRAME_SECONDS, peakAgreement, LANDMARK_PARAMS, LandmarkIndex, LandmarkMatcher, MATCH_DEFAULTS, type Landmarks, type MatchOptions, rmsDb } from '@polyphony/landmarks';
import { mulberry32 } from '@polyphony/vectors';
import { sameRecordingPairs, sameRecordingTest } from './same-recording';
import { applyVariantSpec, storeDiffers } from './variant-spec';

const SR = LANDMARK_PARAMS.sampleRateHz;

interface Song {
  name: string;
  pcm: Float32Array;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

function listAudio(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...listAudio(p));
    else if (/\.(ogg|mp3|flac|wav|opus)$/i.test(entry)) out.push(p);
  }
  return out.sort();
}

/** ffmpeg: any file -> mono 16 kHz float32 PCM (kept in `--pcm-cache DIR` when given, so repeated runs skip decoding). */
function decode(file: string, extraArgs: string[] = []): Float32Array {
  const cacheDir = process.argv.includes('--pcm-cache') ? arg('pcm-cache', '') : '';
  const cached = cacheDir && extraArgs.length === 0 && file.startsWith('/usr/share/') ? path.join(cacheDir, file.slice(11).replace(/[^A-Za-z0-9.-]/g, '_') + '.f32') : '';
  if (cached && existsSync(cached)) {
    const buf = readFileSync(cached);
    return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  }
  const pcm = decodeNow(file, extraArgs);
  if (cached) {
    mkdirSync(cacheDir, { recursive: true });
    writeRaw(cached, pcm);
  }
  return pcm;
}

function decodeNow(file: string, extraArgs: string[]): Float32Array {
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', ...extraArgs, '-i', file, '-vn', '-ac', '1', '-ar', String(SR), '-f', 'f32le', '-'], { maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`ffmpeg failed on ${file}: ${r.stderr.toString()}`);
  const buf = r.stdout;
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

function writeRaw(file: string, pcm: Float32Array): void {
  writeFileSync(file, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
}

/** Runs ffmpeg on raw float PCM with `filterArgs` between input and output; returns the output PCM. */
function ffmpegRaw(work: string, pcm: Float32Array, middle: string[]): Float32Array {
  const input = path.join(work, 'in.raw');
  writeRaw(input, pcm);
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-f', 'f32le', '-ar', String(SR), '-ac', '1', '-i', input, ...middle], { maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`ffmpeg: ${r.stderr.toString()}`);
  return new Float32Array(r.stdout.buffer.slice(r.stdout.byteOffset, r.stdout.byteOffset + r.stdout.byteLength));
}

/** Pink noise (Paul Kellet's refined filter of white noise), seeded. */
function pinkNoise(n: number, seed: number): Float32Array {
  const rnd = mulberry32(seed);
  const out = new Float32Array(n);
  let b0 = 0, b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0;
  for (let i = 0; i < n; i++) {
    const w = 2 * rnd() - 1;
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
    b6 = w * 0.115926;
  }
  return out;
}

function addNoise(pcm: Float32Array, snrDb: number, seed: number): Float32Array {
  const noise = pinkNoise(pcm.length, seed);
  const gain = 10 ** ((rmsDb(pcm) - snrDb - rmsDb(noise)) / 20);
  return pcm.map((v, i) => v + gain * noise[i]!);
}

/** RBJ audio-EQ-cookbook biquad (Q = 1/sqrt(2)), applied in place. */
function biquad(pcm: Float32Array, kind: 'lowpass' | 'highpass', f0: number): Float32Array {
  const w0 = (2 * Math.PI * f0) / SR;
  const alpha = Math.sin(w0) / (2 * Math.SQRT1_2);
  const cos = Math.cos(w0);
  const [b0, b1, b2] = kind === 'lowpass' ? [(1 - cos) / 2, 1 - cos, (1 - cos) / 2] : [(1 + cos) / 2, -(1 + cos), (1 + cos) / 2];
  const [a0, a1, a2] = [1 + alpha, -2 * cos, 1 - alpha];
  const out = new Float32Array(pcm.length);
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < pcm.length; i++) {
    const x = pcm[i]!;
    const y = (b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2) / a0;
    out[i] = y;
    x2 = x1; x1 = x; y2 = y1; y1 = y;
  }
  return out;
}

function bandPass(pcm: Float32Array): Float32Array {
  return biquad(biquad(biquad(biquad(pcm, 'highpass', 300), 'highpass', 300), 'lowpass', 3400), 'lowpass', 3400);
}

function roomImpulse(seed: number): Float32Array {
  const rnd = mulberry32(seed);
  const n = Math.round(0.6 * SR);
  const ir = new Float32Array(n);
  ir[0] = 1;
  const decay = Math.log(1000) / (0.5 * SR); // -60 dB after RT60 = 0.5 s
  const predelay = Math.round(0.01 * SR);
  for (let i = predelay; i < n; i++) ir[i] = 0.35 * (2 * rnd() - 1) * Math.exp(-decay * i);
  return ir;
}

type Degrade = (pcm: Float32Array, seed: number) => Float32Array;

function degradations(work: string): Record<string, Degrade> {
  const irFile = path.join(work, 'ir.raw');
  writeRaw(irFile, roomImpulse(1));
  const reverb: Degrade = (pcm) => ffmpegRaw(work, pcm, ['-f', 'f32le', '-ar', String(SR), '-ac', '1', '-i', irFile, '-filter_complex', '[0:a][1:a]afir=dry=10:wet=10', '-f', 'f32le', '-']);
  const mp3: Degrade = (pcm) => {
    const input = path.join(work, 'mp3-in.raw');
    const file = path.join(work, 'clip.mp3');
    writeRaw(input, pcm);
    const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-f', 'f32le', '-ar', String(SR), '-ac', '1', '-i', input, '-c:a', 'libmp3lame', '-b:a', '64k', '-y', file]);
    if (r.status !== 0) throw new Error(`ffmpeg mp3: ${r.stderr.toString()}`);
    return decode(file);
  };
  return {
    clean: (p) => p,
    'noise 10 dB': (p, s) => addNoise(p, 10, s),
    'noise 5 dB': (p, s) => addNoise(p, 5, s),
    'band-pass 300-3400 Hz': (p) => bandPass(p),
    'noise 10 dB + band-pass': (p, s) => bandPass(addNoise(p, 10, s)),
    reverb,
    'mp3 64 kbit/s': mp3,
    'level -12 dB': (p) => p.map((v) => v * 10 ** (-12 / 20)),
    'speed +2%': (p) => changeSpeed(p, 1.02),
    'speed -2%': (p) => changeSpeed(p, 0.98),
    'phone room': (p, s) => mp3(addNoise(bandPass(reverb(p, s)), 10, s), s),
  };
}

function percentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

interface Outcome {
  truth: number | null;
  row: number | null;
  votes: number;
  lead: number;
  ms: number;
  /** Query landmarks at speed 1 and speeds searched (for threshold and latency analysis of `--outcomes`). */
  queryLandmarks?: number;
  speedsSearched?: number;
  /** The best song's lead as before session 17: over the next song, copies of the same material included. */
  plainLead?: number;
  /** For an answer naming another song than the truth: whether that song holds the clip's material (`same-recording.ts`). */
  sameRecording?: boolean;
  /** `--verify K`: the first K results' peak agreement ({@link peakAgreement}: stored peaks in the span found in the clip). */
  verify?: Array<{ row: number; votes: number; found: number; stored: number }>;
}

/** Wilson score interval (95 %) of `k` successes in `n`, percent: the margin a cell's sample size allows. */
function wilson(k: number, n: number): [number, number] {
  if (n === 0) return [0, 100];
  const z = 1.96;
  const p = k / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [+(100 * Math.max(0, c - h)).toFixed(1), +(100 * Math.min(1, c + h)).toFixed(1)];
}

function main(): void {
  const queries = Number(arg('queries', '30'));
  const scale = Number(arg('scale', '0'));
  const lengths = arg('lengths', '5,10,20').split(',').map(Number);
  // Optional: only these degradations (comma-separated names as printed), and matcher options to compare.
  const kinds = process.argv.includes('--kinds') ? new Set(arg('kinds', '').split(',')) : null;
  const cliMatch: MatchOptions = {
    ...(process.argv.includes('--shifts') ? { shifts: Number(arg('shifts', '1')) } : {}),
    ...(process.argv.includes('--grid-shifts') ? { gridShifts: Number(arg('grid-shifts', '1')) } : {}),
    ...(process.argv.includes('--speeds1') ? { speeds: [1] } : {}),
    ...(process.argv.includes('--exit-votes') ? { earlyExitVotes: Number(arg('exit-votes', '24')), earlyExitLead: Number(arg('exit-lead', '12')) } : {}),
  };
  const skipOutside = process.argv.includes('--no-outside');
  const warmup = Number(arg('warmup', '0'));
  const cliIndex = process.argv.includes('--stop') ? { stopFraction: Number(arg('stop', '0')) } : {};
  // `--base "storePeaks=4,storeDt=63,queryDt=63"`: the run's own settings (keys as in --variants), so the default
  // pass, the scale pass and every variant start from them instead of LANDMARK_PARAMS / MATCH_DEFAULTS.
  const base = applyVariantSpec(arg('base', ''), { store: { ...LANDMARK_PARAMS.store }, match: cliMatch, index: cliIndex });
  const matchOptions = base.match;
  const indexOptions = base.index;
  const work = mkdtempSync(path.join(tmpdir(), 'landmarks-bench-'));
  const libraryDirs = ['/usr/share/games/wesnoth/1.16/data/core/music', '/usr/share/scummvm/drascula/audio', '/usr/share/games/warzone2100/music'];
  const outsideDirs = ['/usr/share/singularity/music', '/usr/share/games/singularity/music', '/usr/share/hyperrogue/music', '/usr/share/games/hyperrogue/music'];
  const skipped = [...libraryDirs, ...outsideDirs].filter((d) => !existsSync(d));
  const undecodable: string[] = [];
  const tryDecode = (f: string): Float32Array => {
    try {
      return decode(f);
    } catch {
      undecodable.push(path.relative('/usr/share', f)); // some packaged files are not audio (e.g. a broken Ogg header)
      return new Float32Array(0);
    }
  };
  // `--songs N`: only the first N files of each corpus (a quick check of the bench itself, not a figure).
  const songLimit = Number(arg('songs', String(Number.MAX_SAFE_INTEGER)));
  const load = (dirs: string[]): Song[] => dirs.flatMap(listAudio).slice(0, songLimit).map((f) => ({ name: path.relative('/usr/share', f), pcm: tryDecode(f) })).filter((s) => s.pcm.length > 25 * SR);
  const library = load(libraryDirs);
  const outside = load(outsideDirs);

  // Fingerprint cost and size.
  const stored: Landmarks[] = [];
  let cpuMs = 0;
  let bytes = 0;
  let seconds = 0;
  for (const song of library) {
    const t0 = process.cpuUsage();
    const lm = extractLandmarks(song.pcm, base.store);
    const du = process.cpuUsage(t0);
    cpuMs += (du.user + du.system) / 1000;
    bytes += encodeLandmarks(lm).length;
    seconds += song.pcm.length / SR;
    stored.push(lm);
  }
  const fingerprint = {
    songs: library.length,
    audioMinutes: +(seconds / 60).toFixed(1),
    landmarksPerSecond: +(stored.reduce((a, l) => a + l.hashes.length, 0) / seconds).toFixed(2),
    bytesPer4MinuteSong: Math.round((bytes / seconds) * 240),
    cpuMsPer4MinuteSong: Math.round((cpuMs / seconds) * 240),
    note: 'CPU from the 16 kHz PCM the analysis already decodes (decode not included)',
  };

  // The same queries against the library alone, then (with --scale) among synthetic songs.
  // `--seed N` (default 42, the seed of the figures before session 17): the random draw of clips and outside clips.
  const rnd = mulberry32(Number(arg('seed', '42')));
  const degrade = degradations(work);
  // A clip is kept as its recipe (song, start, degradation, seed) and cut and degraded again each time it is searched
  // (the degradations are deterministic): a few thousand 10-20 s clips would not fit in memory as PCM.
  // `--cell-queries "10:noise 10 dB + band-pass=400,10:clean=200"`: another clip count for (length:kind) cells.
  const cellQueries = new Map<string, number>();
  for (const spec of arg('cell-queries', '').split(',').filter(Boolean)) {
    const eq = spec.lastIndexOf('=');
    cellQueries.set(spec.slice(0, eq), Number(spec.slice(eq + 1)));
  }
  interface Query { truth: number; kind: string; seconds: number; start: number; pcm: () => Float32Array }
  const clips: Query[] = [];
  for (const L of lengths) {
    for (const [kind, fn] of Object.entries(degrade)) {
      if (kinds && !kinds.has(kind)) continue;
      const count = cellQueries.get(`${L}:${kind}`) ?? queries;
      for (let q = 0; q < count; q++) {
        const truth = Math.floor(rnd() * library.length);
        const song = library[truth]!.pcm;
        const need = Math.round(L * 1.03 * SR);
        const start = Math.floor(rnd() * Math.max(1, song.length - need));
        clips.push({ truth, kind, seconds: L, start, pcm: () => fn(song.slice(start, start + need), q + 1).slice(0, Math.round(L * SR)) });
      }
    }
  }
  // `--outside N`: clips of music outside the library, each clean and at 10 dB + band-pass (default
  // min(2 x queries, 4 per outside song)); speech clips: min(queries, 20), or `--speech N`.
  const negatives: Array<{ pcm: () => Float32Array; kind: string }> = [];
  const outsideCount = skipOutside ? 0 : Number(arg('outside', String(Math.min(queries * 2, outside.length * 4))));
  for (let q = 0; q < outsideCount; q++) {
    const song = outside[q % outside.length]!.pcm;
    const start = Math.floor(rnd() * (song.length - 11 * SR));
    const clip = () => song.slice(start, start + 10 * SR);
    negatives.push({ pcm: clip, kind: 'other music, clean' });
    negatives.push({ pcm: () => degrade['noise 10 dB + band-pass']!(clip(), q), kind: 'other music, 10 dB + band-pass' });
  }
  const speechFile = path.join(work, 'speech.wav');
  const text = 'It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair. '.repeat(3);
  const speech = spawnSync('espeak-ng', ['-w', speechFile, text]).status === 0 ? decode(speechFile) : null;
  if (speech && !skipOutside) for (let q = 0; q < Number(arg('speech', String(Math.min(queries, 20)))); q++) {
    const start = Math.floor(rnd() * (speech.length - 11 * SR));
    negatives.push({ pcm: () => speech.slice(start, start + 10 * SR), kind: 'speech' });
  }

  // `--subset "10:clean,10:noise 10 dB + band-pass" --subset-max 100 --subset-outside 50`: the --variants and the
  // --scale pass search only these cells (at most subset-max clips each) and the first subset-outside outside clips
  // of each kind (all when not given), so a long table and a 100k pass fit in one run.
  const subsetCells = process.argv.includes('--subset') ? new Set(arg('subset', '').split(',')) : null;
  const subsetMax = Number(arg('subset-max', String(Number.MAX_SAFE_INTEGER)));
  const subsetOutside = Number(arg('subset-outside', String(Number.MAX_SAFE_INTEGER)));
  const subset = (() => {
    const taken = new Map<string, number>();
    const take = (key: string, max: number) => {
      const n = taken.get(key) ?? 0;
      taken.set(key, n + 1);
      return n < max;
    };
    return {
      clips: clips.filter((c) => (!subsetCells || subsetCells.has(`${c.seconds}:${c.kind}`)) && take(`${c.seconds}:${c.kind}`, subsetMax)),
      negatives: negatives.filter((n) => take(n.kind, subsetOutside)),
    };
  })();

  // The stored landmarks the index of the current run holds (a --variants run re-fingerprints the library).
  let storedNow: Landmarks[] | undefined;
  function run(index: LandmarkIndex, rowsOffset: number, options: MatchOptions = matchOptions, only?: typeof subset): { outcomes: Map<string, Outcome[]>; negatives: Map<string, Outcome[]> } {
    const clipsHere = only?.clips ?? clips;
    const negativesHere = only?.negatives ?? negatives;
    const matcher = new LandmarkMatcher(index);
    const measure = (pcm: Float32Array, truth: number | null, clip?: Query): Outcome => {
      // CPU time of this single-threaded process: the one-core cost of the query, unaffected by other load.
      const t0 = process.cpuUsage();
      const report = matcher.match(pcm, { ...options, minVotes: 0, minLead: 0 });
      const du = process.cpuUsage(t0);
      const ms = (du.user + du.system) / 1000;
      const r = report.results[0];
      const row = r ? r.row - rowsOffset : null;
      const other = clip !== undefined && row !== null && row >= 0 && row !== truth;
      // `--verify K` (library runs only): the peak agreement of the first K results, from the stored landmarks.
      const verifyK = rowsOffset === 0 ? Number(arg('verify', '0')) : 0;
      let verify: Outcome['verify'];
      if (verifyK > 0) {
        const peaks = extractPeaks(pcm, options.query ?? LANDMARK_PARAMS.query);
        const clipFrames = Math.floor(pcm.length / LANDMARK_PARAMS.hopSamples);
        verify = report.results.slice(0, verifyK).map((x) => ({ row: x.row, votes: x.votes, ...peakAgreement(peaks, (storedNow ?? stored)[x.row]!, Math.round(x.offsetSeconds / FRAME_SECONDS), x.speed, clipFrames) }));
      }
      return { ...(verify ? { verify } : {}), truth, row, votes: r?.votes ?? 0, lead: r?.lead ?? 0, plainLead: r ? r.votes - (report.results[1]?.votes ?? 0) : 0, ms, queryLandmarks: report.queryLandmarks, speedsSearched: report.speedsSearched, ...(other ? { sameRecording: twins.same(clip.truth, clip.start, clip.seconds, row) } : {}) };
    };
    // `--warmup N`: the first N clips are searched once untimed first (JIT, page cache), stated in the report.
    for (const c of clipsHere.slice(0, warmup)) matcher.match(c.pcm(), { ...options, minVotes: 0, minLead: 0 });
    const outcomes = new Map<string, Outcome[]>();
    for (const c of clipsHere) {
      const key = `${c.seconds}s ${c.kind}`;
      if (!outcomes.has(key)) outcomes.set(key, []);
      outcomes.get(key)!.push(measure(c.pcm(), c.truth, c));
    }
    const neg = new Map<string, Outcome[]>();
    for (const n of negativesHere) {
      if (!neg.has(n.kind)) neg.set(n.kind, []);
      neg.get(n.kind)!.push(measure(n.pcm(), null));
    }
    return { outcomes, negatives: neg };
  }

  const decide = (o: Outcome, minVotes: number, minLead: number) => o.votes >= minVotes && o.lead >= minLead;
  // Right with the same-recording rule: the exact song, or another song that holds the clip's material.
  const twinRight = (o: Outcome) => o.row === o.truth || o.sameRecording === true;
  function summarise(res: ReturnType<typeof run>, minVotes: number, minLead: number) {
    const accuracy: Record<string, string> = {};
    const sameRecording: Record<string, string> = {};
    for (const [key, os] of res.outcomes) {
      const right = os.filter((o) => decide(o, minVotes, minLead) && o.row === o.truth).length;
      const wrong = os.filter((o) => decide(o, minVotes, minLead) && o.row !== o.truth).length;
      const [lo, hi] = wilson(right, os.length);
      accuracy[key] = `top-1 ${((100 * right) / os.length).toFixed(1)}% = ${right}/${os.length} (95% CI ${lo}-${hi}; wrong ${wrong})`;
      const rightT = os.filter((o) => decide(o, minVotes, minLead) && twinRight(o)).length;
      const [loT, hiT] = wilson(rightT, os.length);
      sameRecording[key] = `top-1 ${((100 * rightT) / os.length).toFixed(1)}% = ${rightT}/${os.length} (95% CI ${loT}-${hiT}; wrong ${wrong - (rightT - right)})`;
    }
    const wrongOutside: Record<string, string> = {};
    for (const [kind, os] of res.negatives) {
      const k = os.filter((o) => decide(o, minVotes, minLead)).length;
      wrongOutside[kind] = `${k}/${os.length} identified (95% CI up to ${wilson(k, os.length)[1]}%; should be 0)`;
    }
    return { accuracy, accuracySameRecordingRight: sameRecording, wrongOutside };
  }
  function latency(res: ReturnType<typeof run>) {
    const all = [...res.outcomes.values()].flat().map((o) => o.ms);
    const goal = res.outcomes.get('10s noise 10 dB + band-pass')?.map((o) => o.ms) ?? [];
    return { allQueries: { p50: +percentile(all, 0.5).toFixed(1), p99: +percentile(all, 0.99).toFixed(1) }, goalCase: { p50: +percentile(goal, 0.5).toFixed(1), p99: +percentile(goal, 0.99).toFixed(1) } };
  }

  const small = LandmarkIndex.build(() => stored.map((lm, row) => [row, lm] as const), indexOptions);
  // The same-recording test runs on its own index of the library without a stop-list (every stored landmark).
  const twinIndex = LandmarkIndex.build(() => stored.map((lm, row) => [row, lm] as const), { stopFraction: 0 });
  const twins = sameRecordingTest(stored, twinIndex);
  const res = run(small, 0);
  // `--outcomes FILE`: every clip's best song, votes and lead (minVotes/minLead 0) as JSON, for threshold analysis.
  if (process.argv.includes('--outcomes')) writeFileSync(arg('outcomes', ''), JSON.stringify({ library: Object.fromEntries(res.outcomes), negatives: Object.fromEntries(res.negatives) }));
  const thresholds: Record<string, unknown> = {};
  for (const [v, l] of [[6, 3], [8, 4], [10, 6], [12, 6], [15, 8]] as const) {
    const s = summarise(res, v, l);
    const all = [...res.outcomes.values()].flat();
    const neg = [...res.negatives.values()].flat();
    thresholds[`minVotes ${v}, minLead ${l}`] = {
      top1AllQueries: `${((100 * all.filter((o) => decide(o, v, l) && o.row === o.truth).length) / all.length).toFixed(1)}%`,
      wrongInLibrary: all.filter((o) => decide(o, v, l) && o.row !== o.truth).length,
      wrongOutside: `${neg.filter((o) => decide(o, v, l)).length}/${neg.length}`,
      goal10sNoiseBandPass: s.accuracy['10s noise 10 dB + band-pass'],
      goal10sSameRecordingRight: s.accuracySameRecordingRight['10s noise 10 dB + band-pass'],
    };
  }
  const report: Record<string, unknown> = {
    corpus: { library: library.length, outsideSongs: outside.length, speech: speech !== null, skippedFolders: skipped, undecodable },
    fingerprint,
    defaults: MATCH_DEFAULTS,
    base: { spec: arg('base', ''), store: base.store },
    matchOptions,
    indexOptions,
    library: { indexBytes: small.bytes, postings: small.size, stopped: small.stopped, ...summarise(res, MATCH_DEFAULTS.minVotes, MATCH_DEFAULTS.minLead), latencyMs: latency(res) },
    thresholds,
    sameRecording: {
      songPairs: sameRecordingPairs(stored, twinIndex).map((p) => ({ ...p, a: library[p.a]!.name, b: library[p.b]!.name })),
      // Every answer naming another song than the clip's, tested: aligned span landmarks / span landmarks.
      checks: twins.checks.map((c) => `${library[c.truth]!.name} -> ${library[c.answer]!.name}: ${c.votes}/${c.spanLandmarks}${c.same ? ' same' : ''}`),
    },
  };

  // `--variants "shifts=4,stop=0.1,exit=10/6;shifts=2"`: the same clips against the library under other matcher
  // and index settings (one line each: accuracy at the default thresholds, wrong answers, CPU per query).
  if (process.argv.includes('--variants')) {
    const variants: Record<string, unknown> = {};
    for (const spec of arg('variants', '').split(';').filter(Boolean)) {
      const { store: sd, match: mo, index: io } = applyVariantSpec(spec, base);
      const storeChanged = storeDiffers(sd, base.store);
      const storedV = storeChanged ? library.map((song) => extractLandmarks(song.pcm, sd)) : stored;
      const bytesV = storeChanged ? Math.round((storedV.reduce((a, lm) => a + encodeLandmarks(lm).length, 0) / seconds) * 240) : fingerprint.bytesPer4MinuteSong;
      const ix = LandmarkIndex.build(() => storedV.map((lm, row) => [row, lm] as const), io);
      storedNow = storedV;
      const rv = run(ix, 0, mo, subset);
      storedNow = undefined;
      if (process.argv.includes('--outcomes')) writeFileSync(`${arg('outcomes', '')}.variant-${spec.replace(/[^A-Za-z0-9=.-]/g, '_')}.json`, JSON.stringify({ library: Object.fromEntries(rv.outcomes), negatives: Object.fromEntries(rv.negatives) }));
      const sv = summarise(rv, MATCH_DEFAULTS.minVotes, MATCH_DEFAULTS.minLead);
      const all = [...rv.outcomes.values()].flat();
      const neg = [...rv.negatives.values()].flat();
      const alt: Record<string, string> = {};
      for (const [v, l] of [[8, 4], [10, 6], [12, 6], [15, 8], [20, 10]] as const) {
        alt[`${v}/${l}`] = `wrong in ${all.filter((o) => decide(o, v, l) && o.row !== o.truth).length}, out ${neg.filter((o) => decide(o, v, l)).length}/${neg.length}; ` + Object.entries(summarise(rv, v, l).accuracy).map(([k, a]) => `${k.replace(/^10s /, '')} ${a.split(' ')[1]}`).join(', ');
      }
      variants[spec] = { bytesPer4MinuteSong: bytesV, postings: ix.size, stopped: ix.stopped, ...sv, thresholds: alt, latencyMs: latency(rv) };
      console.log(JSON.stringify({ variant: spec, ...(variants[spec] as object) }, null, 2));
    }
    report.variants = variants;
  }

  // The library-only figures first: the scale pass re-runs every clip against N more songs and takes long.
  console.log(JSON.stringify(report, null, 2));
  if (scale > 0) {
    // Synthetic songs: hashes drawn from the library's own hash distribution, 4 minutes at the stored density.
    // `--synthetic pool` (default, as in earlier figures): each hash is one of the library's stored hashes, so
    // 100k songs share the ~60k distinct hashes of ~100 songs and every list is ~8x longer than spread over
    // the 524k (anchor, df, dt) values a large library uses: pessimistic for latency and memory per hash.
    // `--synthetic marginals`: anchor bin, frequency difference and time difference drawn independently from
    // the library's own distributions of each, so common parts stay common but hashes spread as in a large library.
    const pool = Uint32Array.from(stored.flatMap((l) => Array.from(l.hashes)));
    const perSong = Math.round(fingerprint.landmarksPerSecond * 240);
    const frames = Math.round(240 / (LANDMARK_PARAMS.hopSamples / SR));
    const marginals = arg('synthetic', 'pool') === 'marginals';
    const drawHash = (r: () => number): number => {
      if (!marginals) return pool[Math.floor(r() * pool.length)]!;
      const f1 = pool[Math.floor(r() * pool.length)]! & 0xff000;
      const df = pool[Math.floor(r() * pool.length)]! & 0xfc0;
      const dt = pool[Math.floor(r() * pool.length)]! & 0x3f;
      return f1 | df | dt;
    };
    const synthetic = (row: number): Landmarks => {
      const r = mulberry32(row + 7);
      const times = new Uint16Array(perSong);
      for (let i = 0; i < perSong; i++) times[i] = Math.floor(r() * frames);
      times.sort();
      const hashes = new Uint32Array(perSong);
      for (let i = 0; i < perSong; i++) hashes[i] = drawHash(r);
      return { hashes, times };
    };
    const source = function* (): Iterable<readonly [number, Landmarks]> {
      for (let row = 0; row < scale; row++) yield [row, synthetic(row)] as const;
      for (let i = 0; i < stored.length; i++) yield [scale + i, stored[i]!] as const;
    };
    const rssMiB = () => +(process.memoryUsage().rss / 2 ** 20).toFixed(1);
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const rssBefore = rssMiB();
    const onFileDir = path.join(work, 'postings');
    // `--scale-build file`: the postings built straight into an unlinked file (as the index service builds a large
    // library's), never all in memory; default `memory` (built in memory, moved by the `file` variant's toFile).
    const buildToFile = arg('scale-build', 'memory') === 'file';
    const maxRssMiB = () => +(process.resourceUsage().maxRSS / 1024).toFixed(1);
    const peakBefore = maxRssMiB();
    const t0 = Date.now();
    let big = LandmarkIndex.build(source, buildToFile ? { ...indexOptions, file: { dir: onFileDir, aboveBytes: 0 } } : indexOptions);
    const buildMs = Date.now() - t0;
    const peakAfter = maxRssMiB();
    gc?.();
    const rssResident = rssMiB();
    // `--scale-variants resident,file,resample` (default `resident`): the same clips among the same N songs with the
    // postings in memory, in an unlinked file (`toFile`, as the index service holds them), or with the speed grid
    // analysed by resampling the clip at every speed (the method before the peak mapping).
    const scaleVariants = arg('scale-variants', 'resident').split(',');
    const perVariant: Record<string, unknown> = {};
    for (const v of scaleVariants) {
      // A variant may carry matcher settings after a '+': `file+gridShifts=1` (keys as in --variants: gridShifts, shifts, exit, step, together, refine).
      const [baseV, ...mods] = v.split('+') as [string, ...string[]];
      if (baseV === 'file' && big.resident) {
        big = big.toFile(onFileDir);
        gc?.();
      }
      const options = applyVariantSpec(mods.join(','), { ...base, match: baseV === 'resample' ? { ...matchOptions, gridResample: true } : { ...matchOptions } }).match;
      const matcher = new LandmarkMatcher(big);
      const resV = run(big, scale, options, subset);
      if (process.argv.includes('--outcomes')) writeFileSync(`${arg('outcomes', '')}.scale-${v.replace(/[^A-Za-z0-9=.-]/g, '_')}.json`, JSON.stringify({ library: Object.fromEntries(resV.outcomes), negatives: Object.fromEntries(resV.negatives) }));
      gc?.();
      perVariant[v] = { resident: big.resident, indexBytesInMemoryMiB: +(big.bytes / 2 ** 20).toFixed(1), matcherScratchMiB: +(matcher.bytes / 2 ** 20).toFixed(1), postingsFileMiB: +(big.fileBytes / 2 ** 20).toFixed(1), rssMiB: rssMiB(), ...summarise(resV, MATCH_DEFAULTS.minVotes, MATCH_DEFAULTS.minLead), latencyMs: latency(resV) };
      console.log(JSON.stringify({ scaleVariant: v, ...(perVariant[v] as object) }, null, 2));
    }
    report.scale = {
      songs: scale + library.length,
      synthetic: marginals ? 'marginals' : 'pool',
      postings: big.size,
      stopped: big.stopped,
      postingsMiB: +((big.size * 4) / 2 ** 20).toFixed(1),
      buildMs,
      build: buildToFile ? 'straight to a file' : 'in memory',
      warmupClips: warmup,
      rssMiB: { beforeBuild: rssBefore, afterBuild: rssResident, end: rssMiB(), peakBeforeBuild: peakBefore, peakAfterBuild: peakAfter },
      variants: perVariant,
    };
    big.close();
  }
  rmSync(work, { recursive: true, force: true });
  if (scale > 0) console.log(JSON.stringify({ scale: report.scale }, null, 2));
}

main();
