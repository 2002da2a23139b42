/**
 * A track's MusiCNN network input: the log-mel front end (mel.ts) and the patch layout, without the networks. It is
 * the synchronous part of a MusiCNN analysis (64-403 ms per song on the 2-core build machine, more for long files),
 * so the analysis worker computes it on its CPU threads (audio/cpu-pool.ts, job `musicnn`) and hands the result to
 * the analyser, whose networks run in ONNX Runtime's own threads: the event loop serving probes, routes and AMQP
 * heartbeats is never blocked by it. The analyser computes the same input inline when called with PCM (benchmarks,
 * tests, the reference-vector route); both paths run this function, so the outputs are bit-identical.
 */
import { MUSICNN_INPUT, centredFrameCount, patchFrameRanges, patchStarts, patchTensorData, type MusicnnMelFrontend } from './mel';
import { referencePatchStarts } from './reference-vector';
import type { PcmHolder, TrackCpu } from '../audio/cpu-pool';

/**
 * Which input: `tags` is the analyser's own (musicnn's centred STFT; at most `maxPatches` patches spread evenly over
 * the track, patchStarts), `reference` the reference implementation's (uncentred STFT; every complete patch of the
 * first 600 s, referencePatchStarts).
 */
export type MusicnnInputRequest = { variant: 'tags'; maxPatches: number } | { variant: 'reference' };

/** The network input of one track. */
export interface MusicnnInput {
  variant: MusicnnInputRequest['variant'];
  /** Start frames of the patches, in order. */
  starts: number[];
  /** [patches, 187, 96] float32, frame-major per patch (patchTensorData). */
  input: Float32Array;
  /** `reference`: complete patches in the first 600 s (0 when the song is shorter than one patch and was tiled); `tags`: starts.length. */
  complete: number;
  /** Wall milliseconds of the front end where it ran (on a CPU thread that is its CPU time). */
  melMs: number;
}

/**
 * Computes the network input of `pcm`.
 * @param mel the front end (one per thread: it reuses buffers)
 * @param pcm mono float PCM at 16 kHz
 * @throws RangeError when the audio is too short: 256 samples or fewer (`tags`), fewer than 512 (`reference`, one STFT frame)
 */
export function musicnnInput(mel: MusicnnMelFrontend, pcm: Float32Array, request: MusicnnInputRequest): MusicnnInput {
  const t0 = performance.now();
  if (request.variant === 'reference') {
    if (pcm.length < MUSICNN_INPUT.nFft) throw new RangeError(`audio of ${pcm.length} samples is too short for MusiCNN`);
    const { starts, samples, complete } = referencePatchStarts(pcm.length);
    const spectrogram = mel.compute(pcm.subarray(0, samples), patchFrameRanges(starts), false);
    return { variant: 'reference', starts, input: patchTensorData(spectrogram, starts), complete, melMs: performance.now() - t0 };
  }
  if (pcm.length <= MUSICNN_INPUT.nFft / 2) throw new RangeError(`audio of ${pcm.length} samples is too short for MusiCNN`);
  const starts = patchStarts(centredFrameCount(pcm.length), request.maxPatches);
  const spectrogram = mel.compute(pcm, patchFrameRanges(starts));
  return { variant: 'tags', starts, input: patchTensorData(spectrogram, starts), complete: starts.length, melMs: performance.now() - t0 };
}

/**
 * What `MusicnnAnalyser.referenceVector` is given for `pcm`: its `reference` input computed on `cpu`'s threads when it
 * offers them (off the event loop), else the PCM itself (the analyser computes the input inline).
 * @throws RangeError when the audio is too short; AnalysisThreadError when the thread died
 */
export async function referenceInputOf(cpu: Pick<TrackCpu, 'musicnnInput'> | undefined, pcm: PcmHolder): Promise<MusicnnInput | Float32Array> {
  return cpu?.musicnnInput ? cpu.musicnnInput(pcm, { variant: 'reference' }) : pcm.samples;
}
