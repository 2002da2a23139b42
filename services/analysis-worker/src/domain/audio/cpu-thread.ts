/**
 * Worker-thread side of the analysis worker's CPU pool (`cpu-pool.ts`): the per-song synchronous DSP that would
 * otherwise block the service's event loop for seconds. Each message is one job on one song's PCM:
 *  - `analyse`: the dsp-v1 embedding and descriptors (`DefaultEmbedder.analyseTrack`: frames, FFT, contrast, chroma,
 *    rhythm);
 *  - `fingerprint`: the recording fingerprint (`recordingFingerprint`: landmark spectrogram, peaks, codec);
 *  - `musicnn`: the MusiCNN network input (`musicnnInput`: log-mel front end and patches), whose Float32Array goes
 *    back transferred too.
 * The PCM arrives transferred (its ArrayBuffer moves to this thread, no copy) and goes back transferred with the
 * reply, success or failure, so the caller owns it again. Same code and inputs as the inline call, so the results are
 * bit-identical. A failure is answered as `{error}` (name, message, and for InsufficientAudioError its `code` and
 * `seconds`) for the pool to rebuild the same error class on the caller's side.
 */
import { isArrayBuffer } from 'node:util/types';
import { parentPort, threadId } from 'node:worker_threads';
import { DefaultEmbedder, InsufficientAudioError } from './embedder';
import { recordingFingerprint } from './landmark-print';
import { musicnnInput, type MusicnnInput } from '../musicnn/input';
import { MUSICNN_INPUT, MusicnnMelFrontend } from '../musicnn/mel';
import type { CpuJob, CpuReply, CpuThreadError } from './cpu-pool';

// One embedder per thread (it reuses buffers and is not thread-safe; a thread runs one job at a time).
const embedder = new DefaultEmbedder();
// Likewise one MusiCNN front end, made at the thread's first `musicnn` job.
let mel: MusicnnMelFrontend | undefined;

function describeError(err: unknown): CpuThreadError {
  if (err instanceof InsufficientAudioError) return { name: err.name, message: err.message, code: err.code, seconds: err.seconds };
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { name: 'Error', message: String(err) };
}

function run(job: CpuJob): unknown {
  const samples = new Float32Array(job.buffer, job.byteOffset, job.length);
  if (job.kind === 'analyse') return embedder.analyseTrack(samples, job.sampleRate);
  if (job.kind === 'musicnn') {
    if (job.sampleRate !== MUSICNN_INPUT.sampleRateHz) throw new RangeError(`MusiCNN needs ${MUSICNN_INPUT.sampleRateHz} Hz audio, got ${job.sampleRate} Hz`);
    return musicnnInput((mel ??= new MusicnnMelFrontend()), samples, job.musicnn!);
  }
  return recordingFingerprint(samples, job.sampleRate);
}

parentPort?.on('message', (job: CpuJob) => {
  let reply: CpuReply;
  const transfer: ArrayBuffer[] = isArrayBuffer(job.buffer) ? [job.buffer] : [];
  try {
    const output = run(job);
    if (job.kind === 'musicnn') transfer.push((output as MusicnnInput).input.buffer as ArrayBuffer);
    reply = { id: job.id, threadId, output, buffer: job.buffer };
  } catch (err) {
    reply = { id: job.id, threadId, error: describeError(err), buffer: job.buffer };
  }
  parentPort!.postMessage(reply, transfer);
});
