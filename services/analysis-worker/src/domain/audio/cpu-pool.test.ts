/**
 * The analysis CPU pool (real worker threads, a real Wesnoth song decoded by ffmpeg): the thread's dsp-v1 analysis
 * and recording fingerprint are bit-identical to the inline calls, the PCM comes back to the caller, errors keep
 * their class across the thread boundary, and a thread that dies fails its job transiently and is replaced.
 */
import { isTransientFault } from '@polyphony/platform';
import { wesnothFiles } from '@polyphony/testkit';
import { AnalysisThreadError, AnalysisThreadPool } from './cpu-pool';
import { decodeToPcm, type DecodedAudio } from './decode';
import { DefaultEmbedder, InsufficientAudioError } from './embedder';
import { recordingFingerprint } from './landmark-print';
import { killFirstThreadOnItsJob } from './__tests__/thread-death';
import { musicnnInput } from '../musicnn/input';
import { MusicnnMelFrontend } from '../musicnn/mel';

/** The bytes of a float array, to compare results bit for bit. */
const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('AnalysisThreadPool (worker threads, a Wesnoth song)', () => {
  jest.setTimeout(120_000);
  let song: DecodedAudio;
  let pool: AnalysisThreadPool;

  beforeAll(async () => {
    song = await decodeToPcm(wesnothFiles()[0]!);
  });
  beforeEach(() => {
    pool = new AnalysisThreadPool(1);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await pool.close();
  });

  it('When a song is analysed and fingerprinted in the thread, then embedding, descriptors and landmark blob equal the inline results bit for bit, and the PCM comes back', async () => {
    const inline = new DefaultEmbedder().analyseTrack(song.samples, song.sampleRate);
    const inlinePrint = recordingFingerprint(song.samples, song.sampleRate);
    const pcm = { samples: song.samples.slice(), sampleRate: song.sampleRate };
    const lent = pcm.samples;

    const threaded = await pool.analyseTrack(pcm);
    // The caller's array was transferred (detached) and a view of the returned buffer put in its place.
    expect(lent.length).toBe(0);
    expect(bytes(pcm.samples).equals(bytes(song.samples))).toBe(true);
    const threadedPrint = await pool.recordingFingerprint(pcm);

    expect(threaded.embedding).toHaveLength(200);
    expect(bytes(threaded.embedding).equals(bytes(inline.embedding))).toBe(true);
    expect(threaded.descriptors).toEqual(inline.descriptors);
    expect(threadedPrint).toEqual(inlinePrint);
    expect(threadedPrint.landmarks).toBeGreaterThan(100);
    expect(bytes(pcm.samples).equals(bytes(song.samples))).toBe(true);
    expect(pool.threadCount).toBe(1);
  });

  it('When the MusiCNN input is computed in the thread, then both variants equal the inline front end bit for bit, the input comes back transferred and the PCM comes back', async () => {
    const mel = new MusicnnMelFrontend();
    const pcm = { samples: song.samples.slice(), sampleRate: song.sampleRate };
    for (const request of [{ variant: 'tags', maxPatches: 3 }, { variant: 'tags', maxPatches: Infinity }, { variant: 'reference' }] as const) {
      const inline = musicnnInput(mel, song.samples, request);
      const threaded = await pool.musicnnInput(pcm, request);
      expect([threaded.variant, threaded.starts, threaded.complete]).toEqual([inline.variant, inline.starts, inline.complete]);
      expect(threaded.input.length).toBe(inline.starts.length * 187 * 96);
      expect(bytes(threaded.input).equals(bytes(inline.input))).toBe(true);
      expect(bytes(pcm.samples).equals(bytes(song.samples))).toBe(true);
    }
    // Too short for MusiCNN: RangeError as inline, and the PCM still comes back.
    const tiny = { samples: song.samples.slice(0, 200), sampleRate: 16000 };
    await expect(pool.musicnnInput(tiny, { variant: 'tags', maxPatches: 2 })).rejects.toThrow(RangeError);
    expect(tiny.samples.length).toBe(200);
    await expect(pool.musicnnInput({ samples: song.samples.slice(0, 32000), sampleRate: 22050 }, { variant: 'reference' })).rejects.toThrow(/16000 Hz/);
  });

  it('When the audio is shorter than a second, then the thread answers InsufficientAudioError (code audio_too_short) as inline, and the PCM comes back', async () => {
    const short = song.samples.slice(0, 8000);
    const inline = (() => {
      try {
        new DefaultEmbedder().analyseTrack(short, 16000);
      } catch (err) {
        return err as InsufficientAudioError;
      }
    })();
    const pcm = { samples: short.slice(), sampleRate: 16000 };
    const err = await pool.analyseTrack(pcm).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientAudioError);
    expect(inline).toBeInstanceOf(InsufficientAudioError);
    expect((err as InsufficientAudioError).code).toBe('audio_too_short');
    expect((err as InsufficientAudioError).message).toBe(inline!.message);
    expect(isTransientFault(err)).toBe(false);
    expect(bytes(pcm.samples).equals(bytes(short))).toBe(true);
  });

  it('When the sample rate is not 16 kHz, then the fingerprint fails with a RangeError as inline, not a thread error', async () => {
    const pcm = { samples: song.samples.slice(0, 44100 * 3), sampleRate: 44100 };
    const err = await pool.recordingFingerprint(pcm).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/16000 Hz/);
    expect(err).not.toBeInstanceOf(AnalysisThreadError);
  });

  it('When the thread dies during a job, then the job fails with a transient AnalysisThreadError and the next job runs on a new thread', async () => {
    const workers = killFirstThreadOnItsJob();
    const pcm = { samples: song.samples.slice(), sampleRate: song.sampleRate };
    const err = await pool.analyseTrack(pcm).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnalysisThreadError);
    expect(isTransientFault(err)).toBe(true);
    expect(pool.threadCount).toBe(0);

    const again = { samples: song.samples.slice(), sampleRate: song.sampleRate };
    const analysis = await pool.analyseTrack(again);
    expect(analysis.embedding).toHaveLength(200);
    expect(workers).toHaveLength(2);
    expect(workers[1]).not.toBe(workers[0]);
    expect(pool.threadCount).toBe(1);
  });

  it('When the pool is closed, then a new job fails with AnalysisThreadError instead of starting a thread', async () => {
    await pool.close();
    const err = await pool.recordingFingerprint({ samples: song.samples.slice(0, 32000), sampleRate: 16000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnalysisThreadError);
    expect(pool.threadCount).toBe(0);
  });
});
