/**
 * Cost of MusiCNN per track (issue 13) in CPU ms, one core: ffmpeg decode (the child's user + system time,
 * read from this process's cutime/cstime in /proc/self/stat after ffmpeg is reaped, 10 ms ticks), mel front
 * end of the chosen patches' frames, MSD network, MTT network (process.cpuUsage around each stage, see
 * analyser.ts `cpu`), their total, and the ratio of MusiCNN's CPU (mel + networks) to ffmpeg's. CPU time
 * stays meaningful on the shared machine where wall time is not. Tracks: the first N Wesnoth tracks of
 * 150-330 s (about 4 minutes), each run with several patch budgets.
 * Then RSS over M repeated analyses (flat = no leak of tensors, sessions or buffers).
 *
 * Run: node bench/dist/analysis-worker/musicnn-cost.js [tracks=4] [rssIterations=100] [patches=4,8,16,32]
 * (MODELS_DIR, else ../shared/models relative to the repository root; MUSICNN_BACKEND: onnxruntime, wasm,
 * else auto = onnxruntime when it loads; MUSICNN_PRECISION: int8 or float, default the worker's, see musicnn-cache.ts
 * benchPrecision).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { decodeToPcm, MusicnnAnalyser } from '@polyphony/analysis-worker/engine';
import { wesnothTracks } from './corpus';
import { benchBackend, benchModelsDir, benchPrecision } from './musicnn-cache';

/** CPU ms of this process's reaped children (Linux /proc/self/stat fields 16-17, clock ticks of 10 ms). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); cutime and cstime are fields 16 and 17
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** Lets libuv reap an exited ffmpeg so that its CPU is counted in cutime before or after, not mixed up. */
const settle = () => new Promise((r) => setTimeout(r, 300));

const load = () => loadavg().map((v) => v.toFixed(1)).join(' ');

async function main(): Promise<void> {
  const nTracks = Number(process.argv[2] ?? 4);
  const rssIterations = Number(process.argv[3] ?? 100);
  const budgets = (process.argv[4] ?? '4,8,16,32').split(',').map(Number);
  const analyser = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), precision: benchPrecision() });
  const tf = analyser.tf;
  const wasm = tf ? `, SIMD ${tf.env().getBool('WASM_HAS_SIMD_SUPPORT')}, threads ${tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT')}` : '';
  process.stdout.write(`backend ${analyser.backend}${wasm}; precision ${analyser.precision}; MTT ${analyser.hasMtt}; load average ${load()}\n`);
  const picked = [];
  for (const t of wesnothTracks()) {
    if (picked.length >= nTracks) break;
    await settle();
    const c0 = childrenCpuMs();
    const pcm = await decodeToPcm(t.path);
    await settle();
    const decodeCpu = childrenCpuMs() - c0;
    if (pcm.durationSeconds < 150 || pcm.durationSeconds > 330) continue;
    picked.push({ t, pcm, decodeCpu });
  }
  await analyser.analyse(picked[0]!.pcm.samples, 2); // warm-up (kernels, first allocations)
  process.stdout.write('track | s | patches | ffmpeg decode cpu ms | mel cpu ms | MSD cpu ms | MTT cpu ms | total cpu ms | MusiCNN / ffmpeg | load\n');
  for (const { t, pcm, decodeCpu } of picked) {
    for (const k of budgets) {
      const out = await analyser.analyse(pcm.samples, k);
      const { starts } = out;
      const cpu = out.cpu!;
      const musicnn = cpu.melMs + cpu.msdMs + cpu.mttMs;
      const row = [t.name, pcm.durationSeconds.toFixed(0), starts.length, decodeCpu, cpu.melMs.toFixed(0), cpu.msdMs.toFixed(0), cpu.mttMs.toFixed(0), (decodeCpu + musicnn).toFixed(0), (musicnn / decodeCpu).toFixed(1), loadavg()[0]!.toFixed(1)];
      process.stdout.write(`${row.join(' | ')}\n`);
    }
  }
  const rss: number[] = [];
  const pcm = picked[0]!.pcm.samples;
  for (let i = 0; i < rssIterations; i++) {
    await analyser.analyse(pcm, 8);
    if (i % Math.max(1, Math.floor(rssIterations / 10)) === 0 || i === rssIterations - 1) rss.push(Math.round(process.memoryUsage().rss / 1e6));
  }
  process.stdout.write(`RSS MB over ${rssIterations} analyses (8 patches each): ${rss.join(' ')}; tfjs tensors alive ${tf ? tf.memory().numTensors : '-'}; load ${load()}\n`);
  analyser.dispose();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
