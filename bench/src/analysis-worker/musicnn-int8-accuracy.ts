/**
 * MusiCNN int8 (MUSICNN_PRECISION=int8) against float on ONNX Runtime, both in one process on the same decoded
 * tracks, at the worker's budget (DEFAULT_MUSICNN_PATCHES evenly spaced patches): per patch, tag probabilities (max and
 * mean absolute difference) and the cosine distance of the 200-d penultimate vectors (MSD and MTT); per track, the
 * track tags (mean over patches, as learned.ts stores them) and the cosine distance of the stored
 * `tfjs:musicnn-fusion-v1` vectors (FusionEmbedder on the same dsp-v1 embedding, computed as the worker does). It also
 * takes the A/B cost: CPU ms per track of the MSD and MTT networks at each precision (process.cpuUsage, the two
 * precisions alternating track by track, so load drifts hit both alike).
 *
 * Tracks: the interleaved corpus (corpus.ts, round-robin over the soundtracks), the first N (all by default), both
 * tuning and held-out (the int8 calibration used only tuning tracks of the 16 session-9 soundtracks: the held-out line,
 * and the line of the soundtracks outside those 16 when the grown corpus is installed, are the clean ones).
 *
 * Run: node bench/dist/analysis-worker/musicnn-int8-accuracy.js [tracks=all] (MODELS_DIR, else
 *   ../shared/models).
 */
import { loadavg } from 'node:os';
import { DEFAULT_MUSICNN_PATCHES, ANALYSIS_PARAMS, FrameAnalyser, dspV1RawFeatures, DefaultEmbedder, FusionEmbedder, trackTags } from '@polyphony/analysis-worker/engine';
import type { MusicnnAnalyser, MusicnnPrecision } from '@polyphony/analysis-worker/engine';
import { SESSION9_GROUPS, decodeCorpusTrack, interleaved, isHeldOut, loadCorpus } from './corpus';
import { loadPrecisionAnalyser } from './musicnn-cache';
import { cosineDistance } from '@polyphony/vectors';

/** Collected differences of one part of the corpus. */
class Stats {
  patchTagMax = 0;
  patchTagSum = 0;
  patchTagCount = 0;
  trackTagMax = 0;
  readonly penCos: number[] = [];
  readonly fusionCos: number[] = [];
  tracks = 0;

  add(other: Stats): void {
    this.patchTagMax = Math.max(this.patchTagMax, other.patchTagMax);
    this.patchTagSum += other.patchTagSum;
    this.patchTagCount += other.patchTagCount;
    this.trackTagMax = Math.max(this.trackTagMax, other.trackTagMax);
    this.penCos.push(...other.penCos);
    this.fusionCos.push(...other.fusionCos);
    this.tracks += other.tracks;
  }

  line(label: string): string {
    const q = (v: number[], p: number) => {
      const s = [...v].sort((a, b) => a - b);
      return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : NaN;
    };
    const e = (v: number) => v.toExponential(1);
    return (
      `${label} (${this.tracks} tracks): patch tags |d| max ${this.patchTagMax.toFixed(4)} mean ${(this.patchTagSum / this.patchTagCount).toFixed(5)}; ` +
      `track tags |d| max ${this.trackTagMax.toFixed(4)}; penultimate cosine distance median ${e(q(this.penCos, 0.5))} p99 ${e(q(this.penCos, 0.99))} max ${e(q(this.penCos, 1))}; ` +
      `fusion vector cosine distance median ${e(q(this.fusionCos, 0.5))} p99 ${e(q(this.fusionCos, 0.99))} max ${e(q(this.fusionCos, 1))}`
    );
  }
}

async function main(): Promise<void> {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  const all = interleaved(loadCorpus(log));
  const tracks = all.slice(0, Number(process.argv[2] ?? all.length));
  // each precision checked (loadPrecisionAnalyser): on a host that runs int8 as float the comparison would be float vs float
  const load = (precision: MusicnnPrecision) => loadPrecisionAnalyser(precision, { maxPatches: DEFAULT_MUSICNN_PATCHES });
  const nets = { float: await load('float'), int8: await load('int8') };
  const fusion = new FusionEmbedder();
  const embedder = new DefaultEmbedder();
  const frame = new FrameAnalyser();
  const stats = { tuning: new Stats(), heldOut: new Stats(), unseen: new Stats() };
  const cpu = { float: { msd: 0, mtt: 0 }, int8: { msd: 0, mtt: 0 } };
  let timed = 0;
  process.stdout.write(`MusiCNN int8 vs float, ${DEFAULT_MUSICNN_PATCHES} patches, ${tracks.length} tracks; load average ${loadavg().map((v) => v.toFixed(1)).join(' ')}\n`);
  for (const [i, t] of tracks.entries()) {
    const pcm = await decodeCorpusTrack(t, log, `[${i + 1}/${tracks.length}]`);
    if (!pcm) continue;
    const order = i % 2 === 0 ? (['float', 'int8'] as const) : (['int8', 'float'] as const);
    const out: Partial<Record<'float' | 'int8', Awaited<ReturnType<MusicnnAnalyser['analyse']>>>> = {};
    for (const p of order) out[p] = await nets[p].analyse(pcm.samples);
    const a = out.float!;
    const b = out.int8!;
    for (const p of ['float', 'int8'] as const) {
      cpu[p].msd += out[p]!.cpu!.msdMs;
      cpu[p].mtt += out[p]!.cpu!.mttMs;
    }
    timed++;
    const s = new Stats();
    s.tracks = 1;
    for (const net of ['msd', 'mtt'] as const) {
      const fa = a[net]!;
      const fb = b[net]!;
      for (let k = 0; k < fa.tags.length; k++) {
        const d = Math.abs(fa.tags[k]! - fb.tags[k]!);
        s.patchTagMax = Math.max(s.patchTagMax, d);
        s.patchTagSum += d;
        s.patchTagCount++;
      }
      const ta = trackTags(fa);
      const tb = trackTags(fb);
      for (let k = 0; k < ta.length; k++) s.trackTagMax = Math.max(s.trackTagMax, Math.abs(ta[k]! - tb[k]!));
      for (let p = 0; p < fa.patches; p++) s.penCos.push(cosineDistance(fa.penultimate.subarray(p * 200, p * 200 + 200), fb.penultimate.subarray(p * 200, p * 200 + 200)));
    }
    const dsp = embedder.normalise(dspV1RawFeatures(frame.analyse(pcm.samples, ANALYSIS_PARAMS.sampleRateHz)));
    s.fusionCos.push(cosineDistance(fusion.embedTrack(a, dsp), fusion.embedTrack(b, dsp)));
    (isHeldOut(t.name) ? stats.heldOut : stats.tuning).add(s);
    if (!SESSION9_GROUPS.includes(t.group)) stats.unseen.add(s);
    log(`[${i + 1}/${tracks.length}] ${t.name}: fusion cosine distance ${s.fusionCos[0]!.toExponential(1)}, track tags |d| max ${s.trackTagMax.toFixed(4)} (load ${loadavg()[0]!.toFixed(1)})`);
  }
  const both = new Stats();
  both.add(stats.tuning);
  both.add(stats.heldOut);
  process.stdout.write(`${stats.tuning.line('tuning')}\n${stats.heldOut.line('held-out')}\n${both.line('all')}\n`);
  if (stats.unseen.tracks > 0) process.stdout.write(`${stats.unseen.line('soundtracks outside the calibration (not in the 16 groups of session 9)')}\n`);
  const per = (v: number) => (v / timed).toFixed(0);
  const perPatch = (v: number) => (v / timed / DEFAULT_MUSICNN_PATCHES).toFixed(1);
  process.stdout.write(
    `CPU ms per track (A/B, one process, ${timed} tracks): float MSD ${per(cpu.float.msd)} MTT ${per(cpu.float.mtt)} (${perPatch(cpu.float.msd)} / ${perPatch(cpu.float.mtt)} per patch); ` +
      `int8 MSD ${per(cpu.int8.msd)} MTT ${per(cpu.int8.mtt)} (${perPatch(cpu.int8.msd)} / ${perPatch(cpu.int8.mtt)} per patch); load average ${loadavg().map((v) => v.toFixed(1)).join(' ')}\n`,
  );
  nets.float.dispose();
  nets.int8.dispose();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
