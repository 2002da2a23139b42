import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeToPcm, UndecodableAudioError } from './decode';

/**
 * A fake ffmpeg: a node script that ignores its arguments and writes `count` float32 samples (value i / count)
 * to stdout in chunks of odd byte sizes, so samples straddle chunk boundaries; or fails like ffmpeg does.
 */
function fakeFfmpeg(dir: string, mode: 'ok' | 'fail' | 'empty', count = 0): string {
  const path = join(dir, `ffmpeg-${mode}-${count}`);
  writeFileSync(
    path,
    `#!${process.execPath}
const mode = ${JSON.stringify(mode)};
if (mode === 'fail') { process.stderr.write('x.mp3: Invalid data found when processing input\\n'); process.exit(1); }
if (mode === 'empty') process.exit(0);
const n = ${count};
const buf = Buffer.alloc(n * 4);
for (let i = 0; i < n; i++) buf.writeFloatLE(i / n, i * 4);
const sizes = [3, 5, 4096 + 1, 7, 65536 + 2];
let pos = 0, k = 0;
function next() {
  if (pos >= buf.length) return;
  const size = sizes[k++ % sizes.length];
  const part = buf.subarray(pos, Math.min(buf.length, pos + size));
  pos += part.length;
  if (process.stdout.write(part)) setImmediate(next); else process.stdout.once('drain', next);
}
next();
`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe(decodeToPcm.name, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'decode-test-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('When ffmpeg streams samples in odd-sized chunks, then every sample is reassembled in order', async () => {
    const n = 200_003;
    const pcm = await decodeToPcm('in.ogg', { ffmpegPath: fakeFfmpeg(dir, 'ok', n) });
    expect(pcm.samples.length).toBe(n);
    expect(pcm.sampleRate).toBe(16000);
    expect(pcm.durationSeconds).toBeCloseTo(n / 16000, 9);
    expect(pcm.truncated).toBe(false);
    let wrong = 0;
    for (let i = 0; i < n; i++) if (pcm.samples[i] !== Math.fround(i / n)) wrong++;
    expect(wrong).toBe(0);
  });

  it('When maxStoredSeconds is reached, then PCM is cut but the duration counts every decoded sample', async () => {
    const n = 48_000;
    const pcm = await decodeToPcm('in.ogg', { ffmpegPath: fakeFfmpeg(dir, 'ok', n), maxStoredSeconds: 1 });
    expect(pcm.samples.length).toBe(16000);
    expect(pcm.durationSeconds).toBeCloseTo(3, 9);
    expect(pcm.truncated).toBe(true);
    expect(pcm.samples[15999]).toBe(Math.fround(15999 / n));
  });

  it('When ffmpeg fails, then UndecodableAudioError carries its last error line', async () => {
    const err = await decodeToPcm('x.mp3', { ffmpegPath: fakeFfmpeg(dir, 'fail') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UndecodableAudioError);
    expect((err as UndecodableAudioError).reason).toMatch(/Invalid data found/);
    expect((err as UndecodableAudioError).httpStatus).toBe(422);
  });

  it('When ffmpeg produces no samples, then UndecodableAudioError says so', async () => {
    await expect(decodeToPcm('x.mp3', { ffmpegPath: fakeFfmpeg(dir, 'empty') })).rejects.toThrow(/no audio samples/);
  });

  it('When the ffmpeg executable does not exist, then UndecodableAudioError is raised', async () => {
    await expect(decodeToPcm('x.mp3', { ffmpegPath: join(dir, 'missing-ffmpeg') })).rejects.toBeInstanceOf(UndecodableAudioError);
  });
});
