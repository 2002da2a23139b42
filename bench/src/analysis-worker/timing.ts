/**
 * Per-track cost of the audio pipeline on the Wesnoth set (41 Ogg Vorbis tracks, 5.5 s to 5.3 min):
 * decode (ffmpeg -> 16 kHz mono float PCM, wall time including the child process), embed (DefaultEmbedder
 * analyseTrack: spectral pass, 200-d embedding and tempo/key/energy; wall and in-process CPU time), and fpcalc
 * (Chromaprint of the first 120 s, wall time). Prints one line per track in the first pass, totals per pass,
 * the ratios embed/decode and total/decode, and the peak RSS after every pass (memory must not grow with
 * repeated passes).
 *
 * Run: npm run build && node bench/dist/analysis-worker/timing.js [passes=3]
 * Wall times depend on machine load; the CPU column of the embedder is the steadier figure.
 */
import { computeChromaprint, decodeToPcm, DefaultEmbedder } from '@polyphony/analysis-worker/engine';
import { wesnothTracks } from './corpus';

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function main(): Promise<void> {
  const passes = Math.max(1, Number(process.argv[2] ?? 3));
  const tracks = wesnothTracks();
  const embedder = new DefaultEmbedder();
  process.stdout.write(`timing: ${tracks.length} Wesnoth tracks, ${passes} passes, embedder ${embedder.version}\n`);
  process.stdout.write('track                         audio s  decode ms  embed ms (cpu)  fpcalc ms  embed/decode  total/decode\n');
  for (let pass = 1; pass <= passes; pass++) {
    let audio = 0;
    let decodeMs = 0;
    let embedMs = 0;
    let embedCpuMs = 0;
    let fpcalcMs = 0;
    let worstEmbed = 0;
    for (const t of tracks) {
      let s = process.hrtime.bigint();
      const pcm = await decodeToPcm(t.path);
      const d = ms(s);
      s = process.hrtime.bigint();
      const cpu0 = process.cpuUsage();
      embedder.analyseTrack(pcm.samples, pcm.sampleRate);
      const cpu = process.cpuUsage(cpu0);
      const e = ms(s);
      s = process.hrtime.bigint();
      await computeChromaprint(t.path);
      const f = ms(s);
      const eCpu = (cpu.user + cpu.system) / 1000;
      audio += pcm.durationSeconds;
      decodeMs += d;
      embedMs += e;
      embedCpuMs += eCpu;
      fpcalcMs += f;
      worstEmbed = Math.max(worstEmbed, e / d);
      if (pass === 1) {
        process.stdout.write(
          `${t.name.padEnd(30)}${pcm.durationSeconds.toFixed(1).padStart(7)}${d.toFixed(0).padStart(11)}${e.toFixed(0).padStart(10)} (${eCpu.toFixed(0).padStart(4)})${f.toFixed(0).padStart(11)}${(e / d).toFixed(2).padStart(14)}${((d + e + f) / d).toFixed(2).padStart(14)}\n`,
        );
      }
    }
    const rssMb = process.resourceUsage().maxRSS / 1024;
    process.stdout.write(
      `pass ${pass}: audio ${audio.toFixed(0)} s; decode ${decodeMs.toFixed(0)} ms, embed ${embedMs.toFixed(0)} ms (cpu ${embedCpuMs.toFixed(0)} ms), fpcalc ${fpcalcMs.toFixed(0)} ms; ` +
        `embed/decode ${(embedMs / decodeMs).toFixed(2)} (worst track ${worstEmbed.toFixed(2)}), total/decode ${((decodeMs + embedMs + fpcalcMs) / decodeMs).toFixed(2)}; ` +
        `embed ${(embedMs / tracks.length).toFixed(0)} ms/track, ${((embedMs / audio) * 60).toFixed(0)} ms per audio minute; peak RSS ${rssMb.toFixed(0)} MB\n`,
    );
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
