import { analyseAudio } from './analysis';
import { estimateKey, estimateTuningShift, KK_MAJOR, KK_MINOR, PITCH_CLASSES } from './chroma';
import { sines } from './__tests__/signals';
import { chromaFrames } from './track-summary';

function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

describe('chroma', () => {
  it.each([
    [440, 'A'],
    [261.63, 'C'],
    [196, 'G'],
    [329.63, 'E'],
    [1108.73, 'C#'],
  ])('When the input is a %p Hz sine, then the strongest chroma bin is %s', (hz, name) => {
    const chroma = chromaFrames(analyseAudio(sines([[hz, 0.5]], 3), 16000));
    expect(chroma.count).toBeGreaterThan(10);
    expect(PITCH_CLASSES[argmax(chroma.mean)]).toBe(name);
    // A pure tone leaves the other pitch classes far below the peak.
    const sorted = Array.from(chroma.mean).sort((a, b) => b - a);
    expect(sorted[1]!).toBeLessThan(0.5 * sorted[0]!);
  });

  it('When an A4 is tuned a third of a semitone sharp, then the tuning shift is +1 and the bin is still A', () => {
    const hz = 440 * Math.pow(2, 1 / 36);
    const analysis = analyseAudio(sines([[hz, 0.5]], 3), 16000);
    expect(analysis.tuningShift).toBe(1);
    expect(PITCH_CLASSES[argmax(chromaFrames(analysis).mean)]).toBe('A');
  });

  it('When the energy is centred on sub-bin -1, then estimateTuningShift returns -1', () => {
    const total = new Float64Array(36);
    for (let p = 0; p < 12; p++) total[(3 * p + 35) % 36] = 1;
    expect(estimateTuningShift(total)).toBe(-1);
  });

  it('When the silent input has no chroma frames, then the mean chroma is all zeros', () => {
    const chroma = chromaFrames(analyseAudio(new Float32Array(16000 * 2), 16000));
    expect(chroma.count).toBe(0);
    expect(Array.from(chroma.mean)).toEqual(new Array(12).fill(0));
  });
});

describe(estimateKey.name, () => {
  it('When the chroma is the C major profile, then the key is C major with correlation 1', () => {
    const k = estimateKey(KK_MAJOR);
    expect([k.key, k.scale]).toEqual(['C', 'major']);
    expect(k.strength).toBeCloseTo(1, 12);
  });

  it('When the chroma is the minor profile rotated to A, then the key is A minor', () => {
    const chroma = Array.from({ length: 12 }, (_, p) => KK_MINOR[(p - 9 + 12) % 12]!);
    const k = estimateKey(chroma);
    expect([k.key, k.scale, k.tonic]).toEqual(['A', 'minor', 9]);
    expect(k.modeMargin).toBeLessThan(0);
  });

  it('When the chroma is flat, then the default C major with strength 0 is returned', () => {
    expect(estimateKey(new Array(12).fill(1))).toMatchObject({ key: 'C', scale: 'major', strength: 0 });
  });

  it('When a D major triad plays, then the key is D major or its relative B minor', () => {
    const analysis = analyseAudio(sines([[293.66, 0.3], [369.99, 0.3], [440, 0.3]], 4), 16000);
    const k = estimateKey(chromaFrames(analysis).mean);
    expect(['D major', 'B minor']).toContain(`${k.key} ${k.scale}`);
  });
});
