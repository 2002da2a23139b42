/**
 * Cost of MusiCNN per track (issue 13): decode (ffmpeg, a child process), mel front end, MSD network, MTT
 * network, in wall-clock ms and in CPU ms of this process (process.cpuUsage: user + system, i.e. one core's
 * work, which stays meaningful when the shared machine is loaded; ffmpeg's CPU is its own process and is
 * given as wall time). Tracks: the first N Wesnoth tracks of 150-330 s (about 4 minutes), each run with
 * several patch budgets. Then RSS over M repeated analyses (flat = no leak of tfjs tensors or buffers).
 *
 * Run: node services/analysis-worker/dist/bench/musicnn-cost.js [tracks=4] [rssIterations=100]
 * (MODELS_DIR, else ../shared/models relative to the repository root). The tfjs backend is wasm with SIMD,
 * single-threaded (multi-threaded wasm needs browser workers; Node reports no thread support).
 */
import { loadavg } from 'node:os';
import { decodeToPcm } from '../domain/audio/decode';
import { MusicnnAnalyser } from '../domain/musicnn/analyser';
import { MusicnnMelFrontend } from '../domain/musicnn/mel';
import { wesnothTracks } from './corpus';
import { benchModelsDir } from './musicnn-cache';

function cpuMs(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}

async function main(): Promise<void> {
  const nTracks = Number(process.argv[2] ?? 4);
  const rssIterations = Number(process.argv[3] ?? 100);
  const analyser = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: 'wasm' });
  const tf = analyser.tf;
  process.stdout.write(`backend ${analyser.backend}, SIMD ${tf.env().getBool('WASM_HAS_SIMD_SUPPORT')}, threads ${tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT')}; load average ${loadavg().map((v) => v.toFixed(1)).join(' ')}\n`);
  const mel = new MusicnnMelFrontend();
  const candidates = wesnothTracks();
  const picked = [];
  for (const t of candidates) {
    if (picked.length >= nTracks) break;
    const t0 = performance.now();
    const pcm = await decodeToPcm(t.path);
    const decodeMs = performance.now() - t0;
    if (pcm.durationSeconds < 150 || pcm.durationSeconds > 330) continue;
    picked.push({ t, pcm, decodeMs });
  }
  await analyser.analyse(picked[0]!.pcm.samples, 1); // warm-up (wasm kernels, weight upload)
  process.stdout.write('track | s | ffmpeg decode ms | mel all frames cpu ms | patches | MSD cpu ms | MTT cpu ms | MSD+MTT total cpu ms (mel+nets) | ratio to decode\n');
  for (const { t, pcm, decodeMs } of picked) {
    const c0 = process.cpuUsage();
    mel.compute(pcm.samples);
    const melCpu = cpuMs(c0);
    for (const k of [1, 4, 8, 16]) {
      const c1 = process.cpuUsage();
      const out = await analyser.analyse(pcm.samples, k);
      const total = cpuMs(c1);
      const mttShare = out.networkMs > 0 ? out.mttMs / out.networkMs : 0;
      const netCpu = total - (out.melMs / (out.melMs + out.networkMs)) * total;
      process.stdout.write(
        `${t.name} | ${pcm.durationSeconds.toFixed(0)} | ${decodeMs.toFixed(0)} | ${melCpu.toFixed(0)} | ${out.starts.length} | ${(netCpu * (1 - mttShare)).toFixed(0)} | ${(netCpu * mttShare).toFixed(0)} | ${total.toFixed(0)} | ${(total / decodeMs).toFixed(1)}\n`,
      );
    }
  }
  const rss: number[] = [];
  const pcm = picked[0]!.pcm.samples;
  for (let i = 0; i < rssIterations; i++) {
    await analyser.analyse(pcm, 2);
    if (i % Math.max(1, Math.floor(rssIterations / 10)) === 0 || i === rssIterations - 1) rss.push(Math.round(process.memoryUsage().rss / 1e6));
  }
  process.stdout.write(`RSS MB over ${rssIterations} analyses (2 patches each): ${rss.join(' ')}; tfjs tensors alive ${tf.memory().numTensors}\n`);
  analyser.dispose();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
