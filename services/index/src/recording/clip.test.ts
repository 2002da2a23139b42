/**
 * Clip decoding of search by recording (real ffmpeg): length limits, silence, undecodable bytes and the level
 * normalisation, on WAV files written here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rmsDb } from '@polyphony/landmarks';
import { wavBytes } from '@polyphony/testkit';
import { CLIP_TARGET_LEVEL_DB, decodeClip } from './clip';

const LIMITS = { maxUploadBytes: 1 << 20, maxClipSeconds: 5, minClipSeconds: 2 };

/** A 16-bit mono PCM WAV file of `seconds` of a 440 Hz tone at `amplitude` (0 = digital silence), at `rate` Hz. */
function wav(seconds: number, amplitude: number, rate = 44100): Buffer {
  return wavBytes(Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => amplitude * Math.sin((2 * Math.PI * 440 * i) / rate)), rate);
}

describe('decodeClip', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'clip-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, bytes: Buffer) => {
    const p = path.join(dir, name);
    writeFileSync(p, bytes);
    return p;
  };

  it('When a quiet 44.1 kHz WAV clip is decoded, then it is 16 kHz mono, its received level is reported and it is normalised to the target level', async () => {
    // A sine of amplitude 0.01 has an RMS of 0.01/sqrt(2): -43 dBFS.
    const out = await decodeClip(file('quiet.wav', wav(3, 0.01)), LIMITS);
    expect(out.seconds).toBeCloseTo(3, 1);
    expect(out.pcm.length).toBe(Math.round(out.seconds * 16000));
    expect(out.levelDb).toBeCloseTo(20 * Math.log10(0.01 / Math.SQRT2), 0);
    expect(rmsDb(out.pcm)).toBeCloseTo(CLIP_TARGET_LEVEL_DB, 0);
  });

  it('When the clip is too short, too long, silent or not audio, then the documented 400/413 codes come back', async () => {
    await expect(decodeClip(file('short.wav', wav(1, 0.3)), LIMITS)).rejects.toMatchObject({ code: 'clip_too_short', httpStatus: 400 });
    await expect(decodeClip(file('long.wav', wav(6, 0.3)), LIMITS)).rejects.toMatchObject({ code: 'clip_too_long', httpStatus: 413 });
    await expect(decodeClip(file('silent.wav', wav(3, 0)), LIMITS)).rejects.toMatchObject({ code: 'clip_silent', httpStatus: 400 });
    await expect(decodeClip(file('junk.bin', Buffer.from('this is not audio at all, just text '.repeat(200))), LIMITS)).rejects.toMatchObject({ code: 'bad_clip', httpStatus: 400 });
  });
});
