import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromaprintSimilarity } from '@polyphony/vectors';
import { ChromaprintError, computeChromaprint } from './chromaprint';
import { transcode, wesnoth } from './__tests__/wesnoth';

describe(`${computeChromaprint.name} (real fpcalc)`, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'chromaprint-int-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('When fingerprinting a 74 s track, then fpcalc reports its duration and ~8 words per second', async () => {
    const fp = await computeChromaprint(wesnoth('battle-epic'));
    expect(fp.durationSeconds).toBeCloseTo(74.08, 1);
    expect(fp.fingerprint.length).toBeGreaterThan(74 * 7.5);
    expect(fp.fingerprint.length).toBeLessThan(74 * 8.5);
  });

  it('When a track is re-encoded as MP3 128k, then the prints agree above the 0.95 gate; another track stays near 0.5', async () => {
    const original = wesnoth('battle-epic');
    const mp3 = transcode(original, join(dir, 'battle-epic.mp3'), ['-c:a', 'libmp3lame', '-b:a', '128k']);
    const [a, b, other] = await Promise.all([computeChromaprint(original), computeChromaprint(mp3), computeChromaprint(wesnoth('battle'))]);
    expect(chromaprintSimilarity(a.fingerprint, b.fingerprint)!).toBeGreaterThan(0.95);
    expect(chromaprintSimilarity(a.fingerprint, other.fingerprint)!).toBeLessThan(0.7);
  });

  it('When the copy starts 1.5 s later, then the best alignment recovers the shift (~12 words)', async () => {
    const original = wesnoth('battle-epic');
    const trimmed = transcode(original, join(dir, 'battle-epic-trim.flac'), ['-c:a', 'flac'], ['-ss', '1.5']);
    const [a, b] = await Promise.all([computeChromaprint(original), computeChromaprint(trimmed)]);
    expect(chromaprintSimilarity(a.fingerprint, b.fingerprint)!).toBeGreaterThan(0.9);
    expect(chromaprintSimilarity(a.fingerprint, b.fingerprint, { maxOffset: 2 })!).toBeLessThan(0.7);
  });

  it('When the file is not audio, then ChromaprintError is raised', async () => {
    const path = join(dir, 'text.ogg');
    writeFileSync(path, 'not audio');
    await expect(computeChromaprint(path)).rejects.toBeInstanceOf(ChromaprintError);
  });
});
