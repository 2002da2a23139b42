import { isArrayBuffer } from 'node:util/types';
import type { Worker } from 'node:worker_threads';
import type { PutFingerprintRequest } from '@polyphony/contracts';
import { TransientError, startModuleWorker, type Logger } from '@polyphony/platform';
import type { MusicnnInput, MusicnnInputRequest } from '../musicnn/input';
import { DSP_V1_NORMALISATION } from './dsp-v1-normalisation';
import { InsufficientAudioError, type TrackAnalysis } from './embedder';

/** Mono PCM a job runs on (the `DecodedAudio` of decode.ts fits). Its `samples` are lent to the thread during the job. */
export interface PcmHolder {
  samples: Float32Array;
  /** Hz of `samples`. */
  sampleRate: number;
}

/**
 * The per-song CPU steps of a track, off the caller's event loop. The analysis worker's implementation is
 * {@link AnalysisThreadPool}; the interface lets the track processor's tests count or fail the steps.
 */
export interface TrackCpu {
  /** The version of the embeddings `analyseTrack` returns ('dsp-v1'). */
  readonly embedderVersion: string;
  /**
   * The dsp-v1 embedding (200 float32) and descriptors of `pcm`, as `DefaultEmbedder.analyseTrack`.
   * @throws InsufficientAudioError below MIN_AUDIO_SECONDS; RangeError when the sample rate is not 16 kHz;
   *   AnalysisThreadError (transient) when the thread died
   */
  analyseTrack(pcm: PcmHolder): Promise<TrackAnalysis>;
  /**
   * The recording fingerprint of `pcm`, as `recordingFingerprint` (landmark-print.ts).
   * @throws RangeError when the sample rate is not 16 kHz; AnalysisThreadError (transient) when the thread died
   */
  recordingFingerprint(pcm: PcmHolder): Promise<PutFingerprintRequest>;
  /**
   * The MusiCNN network input of `pcm` (log-mel front end and patches, musicnn/input.ts), for
   * `MusicnnAnalyser.analyseInput` / `referenceVector`. Optional: without it the analyser computes the input inline.
   * @throws RangeError when the audio is too short for MusiCNN; AnalysisThreadError (transient) when the thread died
   */
  musicnnInput?(pcm: PcmHolder, request: MusicnnInputRequest): Promise<MusicnnInput>;
}

/** A job message to a CPU thread (`cpu-thread.ts`): the PCM as a transferred buffer and its view. */
export interface CpuJob {
  id: number;
  kind: 'analyse' | 'fingerprint' | 'musicnn';
  /** The `musicnn` job's request. */
  musicnn?: MusicnnInputRequest;
  buffer: ArrayBuffer | SharedArrayBuffer;
  byteOffset: number;
  /** Samples in the view. */
  length: number;
  sampleRate: number;
}

/** An error thrown in a CPU thread, as it crosses back (the class is rebuilt from `name` / `code`). */
export interface CpuThreadError {
  name: string;
  message: string;
  /** AppError code (`audio_too_short`). */
  code?: string;
  /** InsufficientAudioError's length of the audio, seconds. */
  seconds?: number;
}

/** A CPU thread's answer: the job's output or its error, and the PCM buffer handed back. */
export type CpuReply = { id: number; threadId: number; buffer: ArrayBuffer | SharedArrayBuffer } & ({ output: unknown; error?: undefined } | { error: CpuThreadError; output?: undefined });

/**
 * A CPU thread died (uncaught error, out of memory, terminated) while it ran a job, or could not start. Transient:
 * the bus retries the track (never dead-lettered for this) and the pool starts a new thread for the next job. The
 * PCM lent to the dead thread is lost (the caller's `samples` stay detached), so the track's attempt ends here.
 */
export class AnalysisThreadError extends TransientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AnalysisThreadError';
  }
}

interface Job {
  message: CpuJob;
  pcm: PcmHolder;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  job?: Job;
  dead: boolean;
}

/** The error class of a thread's failure on this side: InsufficientAudioError and RangeError keep their class. */
function rebuildError(e: CpuThreadError): Error {
  if (e.code === 'audio_too_short' && typeof e.seconds === 'number') return new InsufficientAudioError(e.seconds);
  const err = e.name === 'RangeError' ? new RangeError(e.message) : new Error(e.message);
  if (e.name !== err.name) err.name = e.name;
  return err;
}

/**
 * The analysis worker's pool of CPU threads (node:worker_threads, `cpu-thread.ts`) for the per-song DSP: the dsp-v1
 * analysis, the recording fingerprint and the MusiCNN front end (log-mel patches, 64-403 ms), each 0.3-0.6 s of synchronous work per song on the 2-core build machine
 * (seconds on slower ones), which inline blocked the event loop that also serves the HTTP routes, health probes, AMQP
 * heartbeats and, in the one-process stack, the gateway and every other service. Threads start lazily at the
 * first job, up to `size` (one per track the worker processes at once); jobs beyond wait in FIFO order. An idle thread
 * is unref'd, so the pool never keeps a process alive; `close()` terminates the threads (the service's stop, after
 * its consumers drained). No inline fallback: the threads run the same modules, so there is nothing the inline
 * path could do that a thread cannot.
 *
 * The PCM is not copied: `pcm.samples`' ArrayBuffer is transferred to the thread for the job (the caller's array
 * is detached meanwhile, so one job per PCM at a time) and handed back with the answer, success or error, when
 * `pcm.samples` is set to a view of it again (same offset and length). A SharedArrayBuffer is shared instead.
 * Results are bit-identical to the inline calls (same code, same input). Errors keep their class
 * (InsufficientAudioError, RangeError); a thread that dies fails its job with {@link AnalysisThreadError}.
 */
export class AnalysisThreadPool implements TrackCpu {
  readonly embedderVersion = DSP_V1_NORMALISATION.version;
  private readonly threads: Thread[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  /**
   * @param size most threads at once, an integer >= 1 (ANALYSIS_CPU_THREADS; default the worker's concurrency)
   * @param logger where a thread's death is reported
   * @throws RangeError when `size` is not a positive integer
   */
  constructor(
    readonly size: number,
    private readonly logger?: Logger,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`analysis CPU threads must be a positive integer, got ${size}`);
  }

  analyseTrack(pcm: PcmHolder): Promise<TrackAnalysis> {
    return this.run('analyse', pcm) as Promise<TrackAnalysis>;
  }

  recordingFingerprint(pcm: PcmHolder): Promise<PutFingerprintRequest> {
    return this.run('fingerprint', pcm) as Promise<PutFingerprintRequest>;
  }

  /** The input comes back transferred (its buffer moves here, no copy). */
  musicnnInput(pcm: PcmHolder, request: MusicnnInputRequest): Promise<MusicnnInput> {
    return this.run('musicnn', pcm, request) as Promise<MusicnnInput>;
  }

  /** Threads running now (started and not dead). */
  get threadCount(): number {
    return this.threads.length;
  }

  /** Terminates every thread; queued and running jobs fail with AnalysisThreadError. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new AnalysisThreadError('analysis CPU pool closed');
    for (const job of this.queue.splice(0)) job.reject(err);
    const threads = this.threads.splice(0);
    for (const t of threads) {
      t.dead = true;
      t.job?.reject(err);
      t.job = undefined;
    }
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private run(kind: CpuJob['kind'], pcm: PcmHolder, musicnn?: MusicnnInputRequest): Promise<unknown> {
    if (this.closed) return Promise.reject(new AnalysisThreadError('analysis CPU pool closed'));
    const s = pcm.samples;
    const message: CpuJob = { id: this.nextId++, kind, ...(musicnn ? { musicnn } : {}), buffer: s.buffer, byteOffset: s.byteOffset, length: s.length, sampleRate: pcm.sampleRate };
    return new Promise((resolve, reject) => {
      this.queue.push({ message, pcm, resolve, reject });
      this.dispatch();
    });
  }

  /** Hands queued jobs to idle threads, starting threads up to `size`. */
  private dispatch(): void {
    while (this.queue.length > 0) {
      let thread = this.threads.find((t) => !t.job);
      if (!thread) {
        if (this.threads.length >= this.size) return;
        thread = this.start();
        if (!thread) return;
      }
      const job = this.queue.shift()!;
      const { buffer } = job.message;
      try {
        // Transferred (a detached buffer, i.e. PCM already lent to another job, throws here).
        thread.worker.postMessage(job.message, isArrayBuffer(buffer) ? [buffer] : []);
      } catch (err) {
        job.reject(err as Error);
        continue;
      }
      thread.job = job;
      thread.worker.ref();
    }
  }

  private start(): Thread | undefined {
    let worker: Worker;
    try {
      worker = startModuleWorker(__dirname, 'cpu-thread');
    } catch (err) {
      const fail = new AnalysisThreadError(`analysis CPU thread could not start: ${(err as Error).message}`, { cause: err });
      for (const job of this.queue.splice(0)) job.reject(fail);
      return undefined;
    }
    const thread: Thread = { worker, dead: false };
    worker.on('message', (reply: CpuReply) => this.onReply(thread, reply));
    worker.on('error', (err) => this.onDeath(thread, err));
    worker.on('exit', (code) => this.onDeath(thread, new Error(`exited with code ${code}`)));
    this.threads.push(thread);
    return thread;
  }

  private onReply(thread: Thread, reply: CpuReply): void {
    const job = thread.job;
    if (!job || job.message.id !== reply.id) return;
    thread.job = undefined;
    thread.worker.unref();
    job.pcm.samples = new Float32Array(reply.buffer, job.message.byteOffset, job.message.length);
    if (reply.error) job.reject(rebuildError(reply.error));
    else job.resolve(reply.output);
    this.dispatch();
  }

  /** A thread died ('error' then 'exit', or 'exit' alone): its job fails transiently; the next job starts a new thread. */
  private onDeath(thread: Thread, cause: Error): void {
    if (thread.dead) return;
    thread.dead = true;
    const i = this.threads.indexOf(thread);
    if (i >= 0) this.threads.splice(i, 1);
    const job = thread.job;
    thread.job = undefined;
    if (job) this.logger?.warn('analysis CPU thread died during a job; the track is retried and the next job starts a new thread', { err: cause.message, job: job.message.kind });
    else this.logger?.warn('idle analysis CPU thread died; the next job starts a new thread', { err: cause.message });
    job?.reject(new AnalysisThreadError(`analysis CPU thread died during ${job.message.kind}: ${cause.message}`, { cause }));
    this.dispatch();
  }
}
