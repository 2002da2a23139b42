/**
 * Worker-thread side of the analysis worker's CPU pool (`cpu-pool.ts`): the per-song synchronous DSP that would
 * otherwise block the service's event loop for seconds. Each message is one job on one song's PCM:
 *  - `analyse`: the dsp-v1 embedding and descriptors (`DefaultEmbedder.analyseTrack`: frames, FFT, contrast, chroma,
 *    rhythm);
 *  - `fingerprint`: the recording fingerprint (`recordingFingerprint`: landmark spectrogram, peaks, codec).
 * The PCM arrives transferred (its ArrayBuffer moves to this thread, no copy) and goes back transferred with the
 * reply, success or failure, so the caller owns it again. Same code and inputs as the inline call, so the results are
 * bit-identical. A failure is answered as `{error}` (name, message, and for InsufficientAudioError its `code` and
 * `seconds`) for the pool to rebuild the same error class on the caller's side.
 */
import { isArrayBuffer } from 'node:util/types';
import { parentPort, threadId } from 'node:worker_threads';
import { DefaultEmbedder, InsufficientAudioError } from './embedder';
import { recordingFingerprint } from './landmark-print';
import type { CpuJob, CpuReply, CpuThreadError } from './cpu-pool';

// One embedder per thread (it reuses buffers and is not thread-safe; a thread runs one job at a time).
const embedder = new DefaultEmbedder();

function describeError(err: unknown): CpuThreadError {
  if (err instanceof InsufficientAudioError) return { name: err.name, message: err.message, code: err.code, seconds: err.seconds };
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { name: 'Error', message: String(err) };
}

function run(job: CpuJob): unknown {
  const samples = new Float32Array(job.buffer, job.byteOffset, job.length);
  if (job.kind === 'analyse') return embedder.analyseTrack(samples, job.sampleRate);
  return recordingFingerprint(samples, job.sampleRate);
}

parentPort?.on('message', (job: CpuJob) => {
  let reply: CpuReply;
  try {
    reply = { id: job.id, threadId, output: run(job), buffer: job.buffer };
  } catch (err) {
    reply = { id: job.id, threadId, error: describeError(err), buffer: job.buffer };
  }
  parentPort!.postMessage(reply, isArrayBuffer(job.buffer) ? [job.buffer] : []);
});
