import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeToPcm, UndecodableAudioError } from './decode';
import { ffprobeDuration, wesnoth } from './__tests__/wesnoth';

describe(`${decodeToPcm.name} (real ffmpeg)`, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'decode-int-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('When decoding a stereo 44.1 kHz Ogg track, then it yields 16 kHz mono PCM of the container duration', async () => {
    const path = wesnoth('battle-epic');
    const pcm = await decodeToPcm(path);
    expect(pcm.sampleRate).toBe(16000);
    expect(pcm.truncated).toBe(false);
    expect(pcm.durationSeconds).toBeCloseTo(ffprobeDuration(path), 1);
    expect(pcm.samples.length).toBe(Math.round(pcm.durationSeconds * 16000));
    let sq = 0;
    let peak = 0;
    for (const v of pcm.samples) {
      sq += v * v;
      peak = Math.max(peak, Math.abs(v));
    }
    expect(Math.sqrt(sq / pcm.samples.length)).toBeGreaterThan(0.01);
    expect(peak).toBeLessThanOrEqual(1.5);
  });

  it('When asking for 22.05 kHz, then the sample count follows the rate', async () => {
    const pcm = await decodeToPcm(wesnoth('victory'), { sampleRate: 22050 });
    expect(pcm.sampleRate).toBe(22050);
    expect(pcm.samples.length / 22050).toBeCloseTo(pcm.durationSeconds, 6);
    expect(pcm.durationSeconds).toBeCloseTo(ffprobeDuration(wesnoth('victory')), 1);
  });

  it('When decoding the same file twice, then the PCM is bit-identical', async () => {
    const a = await decodeToPcm(wesnoth('defeat'));
    const b = await decodeToPcm(wesnoth('defeat'));
    expect(Buffer.from(a.samples.buffer, a.samples.byteOffset, a.samples.byteLength).equals(Buffer.from(b.samples.buffer, b.samples.byteOffset, b.samples.byteLength))).toBe(true);
  });

  it('When decoding through the pipe, then the PCM is bit-identical to the file ffmpeg writes for the same stream (the output buffering changes no sample)', async () => {
    const path = wesnoth('battle-epic');
    const out = join(dir, 'reference.f32');
    execFileSync('ffmpeg', ['-nostdin', '-v', 'error', '-y', '-i', path, '-vn', '-ac', '1', '-ar', '16000', '-f', 'f32le', out]);
    const reference = readFileSync(out);
    const pcm = await decodeToPcm(path);
    expect(pcm.samples.byteLength).toBe(reference.length);
    expect(Buffer.from(pcm.samples.buffer, pcm.samples.byteOffset, pcm.samples.byteLength).equals(reference)).toBe(true);
  });

  it('When the file is not audio, then UndecodableAudioError names ffmpeg’s complaint', async () => {
    const path = join(dir, 'not-audio.mp3');
    writeFileSync(path, 'this is plain text, not an mp3 stream\n'.repeat(50));
    const err = await decodeToPcm(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UndecodableAudioError);
    expect((err as UndecodableAudioError).reason.length).toBeGreaterThan(0);
  });

  it('When the file does not exist, then UndecodableAudioError is raised', async () => {
    await expect(decodeToPcm(join(dir, 'missing.ogg'))).rejects.toBeInstanceOf(UndecodableAudioError);
  });
});
