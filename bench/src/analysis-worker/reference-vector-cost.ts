/**
 * Cost and precision of the reference implementation's MusiCNN vector computed by polyphony (issue 34: the import's
 * agreement check and new files during the switch after an import; MusicnnAnalyser.referenceVector). Per track, in CPU
 * ms of this process (process.cpuUsage, meaningful on the shared machine where wall time is not): the worker's usual
 * MusiCNN pass (`analyse` at the worker's patch budget, MSD + MTT) and the reference's vector (every 3 s patch of the
 * first 600 s, MSD only, float and int8 where the CPU runs it exactly), and the cosine of the int8 vector to the float
 * one (what int8 costs the agreement). Tracks: the first N Wesnoth tracks of 150-600 s.
 *
 * Run: node bench/dist/analysis-worker/reference-vector-cost.js [tracks=3] (MODELS_DIR, else ../shared/models)
 */
import { loadavg } from 'node:os';
import { DEFAULT_MUSICNN_PATCHES, MusicnnAnalyser, cosineSimilarity, decodeToPcm } from '@polyphony/analysis-worker/engine';
import { wesnothTracks } from './corpus';
import { benchModelsDir } from './musicnn-cache';

const load = () => loadavg().map((v) => v.toFixed(1)).join(' ');
const cpuMs = (a: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(a);
  return (d.user + d.system) / 1000;
};

async function main(): Promise<void> {
  const nTracks = Number(process.argv[2] ?? 3);
  const float = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), precision: 'float' });
  const int8 = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), precision: 'int8', useMtt: false });
  process.stdout.write(`backend ${float.backend}; int8 runs as ${int8.precision}; worker patch budget ${DEFAULT_MUSICNN_PATCHES}; load average ${load()}\n`);
  const picked = [];
  for (const t of wesnothTracks()) {
    if (picked.length >= nTracks) break;
    const pcm = await decodeToPcm(t.path);
    if (pcm.durationSeconds >= 150 && pcm.durationSeconds <= 600) picked.push({ name: t.name, pcm });
  }
  await float.analyse(picked[0]!.pcm.samples, 2); // warm-up
  await int8.referenceVector(picked[0]!.pcm.samples.subarray(0, 16000 * 10));
  process.stdout.write('track | s | usual pass cpu ms (MSD+MTT, budget) | reference patches | reference float cpu ms | ms/patch | reference int8 cpu ms | cosine int8 vs float | load\n');
  for (const { name, pcm } of picked) {
    let c = process.cpuUsage();
    await float.analyse(pcm.samples, DEFAULT_MUSICNN_PATCHES);
    const usual = cpuMs(c);
    c = process.cpuUsage();
    const f = await float.referenceVector(pcm.samples);
    const refFloat = cpuMs(c);
    c = process.cpuUsage();
    const q = await int8.referenceVector(pcm.samples);
    const refInt8 = cpuMs(c);
    process.stdout.write(
      `${name} | ${pcm.durationSeconds.toFixed(0)} | ${usual.toFixed(0)} | ${f.patches} | ${refFloat.toFixed(0)} | ${(refFloat / Math.max(1, f.patches)).toFixed(1)} | ${refInt8.toFixed(0)} | ${cosineSimilarity(f.vector, q.vector).toFixed(6)} | ${load()}\n`,
    );
  }
  float.dispose();
  int8.dispose();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
