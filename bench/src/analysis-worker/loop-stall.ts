/**
 * How long the analysis worker's per-song DSP blocks the event loop: the track processor's CPU path (dsp-v1
 * `analyseTrack`, then the recording fingerprint) over the first N Wesnoth tracks, run inline (as before the CPU
 * threads) and through `AnalysisThreadPool` (as the worker runs it now), each under `monitorEventLoopDelay`
 * (10 ms resolution). Prints per mode the max / p99 / mean loop delay (ms) and the wall time, with the load average.
 * The songs are decoded before either mode runs, so only the CPU path is measured. The pool's first job includes the
 * thread's start (module loading happens in the thread, off the loop).
 * Then the same for the MusiCNN front end (mel of the worker's patches, and of the reference vector's patches, up to
 * 200): inline on the loop as before, and on the CPU thread as the track processor runs it now.
 *
 * Run: node bench/dist/analysis-worker/loop-stall.js [tracks=3]
 */
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  AnalysisThreadPool,
  DEFAULT_MUSICNN_PATCHES,
  DefaultEmbedder,
  MusicnnMelFrontend,
  decodeToPcm,
  musicnnInput,
  recordingFingerprint,
  type DecodedAudio,
} from '@polyphony/analysis-worker/engine';
import { wesnothTracks } from './corpus';

const load = () => loadavg().map((v) => v.toFixed(2)).join(' ');
const ms = (ns: number) => (ns / 1e6).toFixed(1);

/** Runs `work` under a loop-delay histogram; returns its max, p99 and mean (ns) and the wall time (ms). */
async function measured(work: () => Promise<void>): Promise<{ max: number; p99: number; mean: number; wallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const t0 = performance.now();
  await work();
  // One more resolution period so a stall at the very end is sampled.
  await new Promise((r) => setTimeout(r, 20));
  const wallMs = performance.now() - t0;
  h.disable();
  return { max: h.max, p99: h.percentile(99), mean: h.mean, wallMs };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 3);
  const tracks = wesnothTracks().slice(0, n);
  const songs: Array<{ name: string; pcm: DecodedAudio }> = [];
  for (const t of tracks) songs.push({ name: t.name, pcm: await decodeToPcm(t.path) });
  console.log(`loop stall of the per-song DSP (dsp-v1 analysis + recording fingerprint), ${songs.length} Wesnoth songs: ${songs.map((s) => `${s.name} ${(s.pcm.samples.length / s.pcm.sampleRate).toFixed(0)} s`).join(', ')}`);
  console.log(`load average before: ${load()}`);

  const embedder = new DefaultEmbedder();
  const inline = await measured(async () => {
    for (const s of songs) {
      embedder.analyseTrack(s.pcm.samples, s.pcm.sampleRate);
      recordingFingerprint(s.pcm.samples, s.pcm.sampleRate);
      // Back to the loop between steps, as the processor's awaits are.
      await new Promise((r) => setImmediate(r));
    }
  });
  console.log(`inline:      max loop delay ${ms(inline.max)} ms, p99 ${ms(inline.p99)} ms, mean ${ms(inline.mean)} ms; wall ${inline.wallMs.toFixed(0)} ms (load ${load()})`);

  const pool = new AnalysisThreadPool(1);
  try {
    const threaded = await measured(async () => {
      for (const s of songs) {
        await pool.analyseTrack(s.pcm);
        await pool.recordingFingerprint(s.pcm);
      }
    });
    console.log(`CPU thread:  max loop delay ${ms(threaded.max)} ms, p99 ${ms(threaded.p99)} ms, mean ${ms(threaded.mean)} ms; wall ${threaded.wallMs.toFixed(0)} ms, first job starts the thread (load ${load()})`);
  } finally {
    await pool.close();
  }

  // The MusiCNN front end (log-mel patches, musicnn/input.ts): inline, as before, and on the CPU thread, as the
  // track processor runs it now (the networks then run in ONNX Runtime's threads).
  const mel = new MusicnnMelFrontend();
  for (const [label, request] of [
    [`${DEFAULT_MUSICNN_PATCHES} patches`, { variant: 'tags', maxPatches: DEFAULT_MUSICNN_PATCHES }],
    ['reference vector (up to 200 patches, during the switch after an import only)', { variant: 'reference' }],
  ] as const) {
    const melInline = await measured(async () => {
      for (const s of songs) {
        musicnnInput(mel, s.pcm.samples, request);
        await new Promise((r) => setImmediate(r));
      }
    });
    const melPool = new AnalysisThreadPool(1);
    try {
      await melPool.musicnnInput(songs[0]!.pcm, request); // starts the thread outside the measurement
      const melThreaded = await measured(async () => {
        for (const s of songs) await melPool.musicnnInput(s.pcm, request);
      });
      console.log(
        `MusiCNN front end, ${label}: inline max loop delay ${ms(melInline.max)} ms (wall ${melInline.wallMs.toFixed(0)} ms); ` +
          `CPU thread max loop delay ${ms(melThreaded.max)} ms, p99 ${ms(melThreaded.p99)} ms (wall ${melThreaded.wallMs.toFixed(0)} ms) (load ${load()})`,
      );
    } finally {
      await melPool.close();
    }
  }
  console.log(`load average after: ${load()}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
