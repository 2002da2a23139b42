/**
 * Worker memory over many tracks (issue 13: "worker RSS flat over 500 tracks"). Runs the analysis worker's
 * in-process work per track, as TrackProcessor does it: ffmpeg decode to 16 kHz mono, the dsp-v1 analysis
 * (DefaultEmbedder.analyseTrack), MusiCNN (MSD + MTT unless MUSICNN_MTT=0, MUSICNN_PATCHES patches, default 4)
 * and the learned features; over the corpus tracks in round-robin order (cycling when N exceeds the corpus).
 * Prints RSS, V8 heap, external memory and live tfjs tensors every 50 tracks, and the CPU time per track
 * (process.cpuUsage; ffmpeg's own CPU is not included).
 *
 * RSS_DSP=0 leaves the dsp-v1 analysis out (pure JavaScript typed arrays, no native or wasm memory; it is
 * most of the CPU per track, so the shared machine can loop more tracks without it).
 *
 * Run: node bench/dist/analysis-worker/musicnn-rss.js [tracks=500] (MUSICNN_PRECISION: int8 or float, default the
 * worker's)
 * (MODELS_DIR, else ../shared/models relative to the repository root).
 */
import { loadavg } from 'node:os';
import { decodeToPcm, UndecodableAudioError, DefaultEmbedder, MusicnnAnalyser, learnedFeatures } from '@polyphony/analysis-worker/engine';
import { interleaved, loadCorpus } from './corpus';
import { benchBackend, benchModelsDir, benchPrecision } from './musicnn-cache';

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 500);
  const patches = Number(process.env.MUSICNN_PATCHES ?? 4);
  const analyser = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), maxPatches: patches, precision: benchPrecision(), useMtt: process.env.MUSICNN_MTT !== '0' });
  const embedder = new DefaultEmbedder();
  const withDsp = process.env.RSS_DSP !== '0';
  const tracks = interleaved(loadCorpus(() => undefined));
  const mb = (b: number) => (b / 1e6).toFixed(0);
  const line = (i: number, cpuMs: number) => {
    const m = process.memoryUsage();
    process.stdout.write(
      `${String(i).padStart(4)} tracks | RSS ${mb(m.rss)} MB | heap ${mb(m.heapUsed)} MB | external ${mb(m.external)} MB | arrayBuffers ${mb(m.arrayBuffers)} MB | tfjs tensors ${analyser.tf?.memory().numTensors ?? '-'} | CPU ${(cpuMs / Math.max(1, i) / 1000).toFixed(2)} s/track | load ${loadavg()[0]!.toFixed(1)}\n`,
    );
  };
  process.stdout.write(`backend ${analyser.backend} (${analyser.precision}), ${patches} patches, dsp-v1 ${withDsp ? 'on' : 'off'}, model ${analyser.modelId}, ${n} tracks over ${tracks.length} corpus files\n`);
  const c0 = process.cpuUsage();
  const cpu = () => {
    const u = process.cpuUsage(c0);
    return (u.user + u.system) / 1000;
  };
  line(0, 0);
  let done = 0;
  for (let k = 0; done < n; k++) {
    const t = tracks[k % tracks.length]!;
    const pcm = await decodeToPcm(t.path).catch((err: unknown) => {
      if (err instanceof UndecodableAudioError) return undefined;
      throw err;
    });
    if (!pcm) continue;
    if (withDsp) embedder.analyseTrack(pcm.samples, pcm.sampleRate);
    learnedFeatures(await analyser.analyse(pcm.samples), analyser.modelId);
    done++;
    if (done % 50 === 0) line(done, cpu());
  }
  analyser.dispose();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
