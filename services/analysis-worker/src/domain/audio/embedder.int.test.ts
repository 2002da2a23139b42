import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeToPcm } from './decode';
import { cosineDistance } from '@polyphony/vectors';
import { DefaultEmbedder, DSP_V1_IDENTITY_CALIBRATION } from './embedder';
import { transcode, wesnoth } from './__tests__/wesnoth';

/** Real Wesnoth tracks through the whole pipeline: ffmpeg decode -> DefaultEmbedder. */
describe(`${DefaultEmbedder.name} on real music`, () => {
  const embedder = new DefaultEmbedder();
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'embedder-int-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function embedFile(path: string): Promise<Float32Array> {
    const pcm = await decodeToPcm(path);
    return embedder.embed(pcm.samples, pcm.sampleRate);
  }

  it('When embedding real tracks, then each embedding has 200 finite values and distinct tracks differ', async () => {
    const stems = ['battle-epic', 'elf-land', 'knalgan_theme', 'victory'];
    const embeddings = await Promise.all(stems.map((s) => embedFile(wesnoth(s))));
    for (const e of embeddings) {
      expect(e.length).toBe(200);
      expect(e.every(Number.isFinite)).toBe(true);
    }
    for (let i = 0; i < embeddings.length; i++) {
      for (let j = i + 1; j < embeddings.length; j++) {
        expect(cosineDistance(embeddings[i]!, embeddings[j]!)).toBeGreaterThan(DSP_V1_IDENTITY_CALIBRATION.duplicateDistanceThresholdCosine);
      }
    }
  });

  it('When a track is decoded and embedded twice, then the embeddings are bit-identical', async () => {
    const a = await embedFile(wesnoth('knalgan_theme'));
    const b = await embedFile(wesnoth('knalgan_theme'));
    expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer))).toBe(true);
  });

  it.each([
    ['mp3', ['-c:a', 'libmp3lame', '-b:a', '128k']],
    ['m4a', ['-c:a', 'aac', '-b:a', '128k']],
    ['opus', ['-c:a', 'libopus', '-b:a', '96k']],
  ])('When the track is re-encoded as %s, then the copy is within the duplicate threshold and far closer than another track', async (ext, options) => {
    const original = wesnoth('elf-land');
    const copy = transcode(original, join(dir, `elf-land.${ext}`), options);
    const [eo, ec, other] = await Promise.all([embedFile(original), embedFile(copy), embedFile(wesnoth('elvish-theme'))]);
    const dCopy = cosineDistance(eo, ec);
    expect(dCopy).toBeLessThan(DSP_V1_IDENTITY_CALIBRATION.duplicateDistanceThresholdCosine);
    expect(dCopy).toBeLessThan(0.2 * cosineDistance(eo, other));
  });

  it('When describing a real track, then tempo, key and energy are in their documented ranges', async () => {
    const pcm = await decodeToPcm(wesnoth('battle-epic'));
    const { descriptors } = embedder.analyseTrack(pcm.samples, pcm.sampleRate);
    expect(descriptors.tempoBpm).not.toBeNull();
    expect(descriptors.tempoBpm!).toBeGreaterThanOrEqual(40);
    expect(descriptors.tempoBpm!).toBeLessThanOrEqual(200);
    expect(descriptors.energy).toBeGreaterThan(0.3);
    expect(descriptors.energy).toBeLessThan(0.95);
    expect(descriptors.keyStrength).toBeGreaterThan(0.3);
  });
});
