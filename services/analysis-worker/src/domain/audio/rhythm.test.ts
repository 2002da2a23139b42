import { analyseAudio } from './analysis';
import { computeDescriptors } from './descriptors';
import { circularTempo, foldTempo, OnsetAutocorrelation, sampleAutocorrelation, tempoFromAutocorrelation } from './rhythm';
import { clickTrack } from './__tests__/signals';
import { onsetAutocorrelation, trackTempo } from './track-summary';

describe('tempo', () => {
  it.each([120, 90, 140, 75])('When the input is a %i BPM click track, then the tempo is that BPM within 2 %%', (bpm) => {
    const tempo = trackTempo(analyseAudio(clickTrack(bpm, 20), 16000));
    expect(tempo).not.toBeNull();
    expect(Math.abs(foldTempo(tempo!.bpm) - bpm) / bpm).toBeLessThan(0.02);
    expect(tempo!.pulseClarity).toBeGreaterThan(0.5);
  });

  it('When computing descriptors of a 100 BPM click track, then tempoBpm is about 100', () => {
    const d = computeDescriptors(clickTrack(100, 20, 3), 16000);
    expect(d.tempoBpm).not.toBeNull();
    expect(Math.abs(d.tempoBpm! - 100)).toBeLessThan(2);
  });

  it('When the autocorrelation is flat or negative, then no tempo is returned', () => {
    expect(tempoFromAutocorrelation(new Float64Array(70).fill(-0.1), 31.25)).toBeNull();
  });
});

describe(foldTempo.name, () => {
  it.each([
    [250, 125],
    [420, 105],
    [30, 60],
    [15, 60],
    [40, 40],
    [200, 200],
    [120, 120],
  ])('When folding %p BPM, then the result is %p', (input, expected) => {
    expect(foldTempo(input)).toBe(expected);
  });

  it('When the tempo is not positive or not finite, then the result is NaN', () => {
    expect(foldTempo(0)).toBeNaN();
    expect(foldTempo(Number.NaN)).toBeNaN();
    expect(foldTempo(Infinity)).toBeNaN();
  });
});

describe(OnsetAutocorrelation.name, () => {
  it('When the envelope is a pulse train of period 8, then r peaks at lags 8 and 16 and r[0] is 1', () => {
    const env = Float64Array.from({ length: 400 }, (_, t) => (t % 8 === 0 ? 1 : 0));
    const acf = new OnsetAutocorrelation(20);
    acf.add(env);
    const r = acf.result()!;
    expect(r[0]).toBeCloseTo(1, 12);
    expect(r[8]!).toBeGreaterThan(0.9);
    expect(r[16]!).toBeGreaterThan(0.9);
    expect(r[4]!).toBeLessThan(0);
  });

  it('When every envelope is too short, then the result is null', () => {
    const acf = new OnsetAutocorrelation(50);
    acf.add(new Float64Array(60).fill(1));
    expect(acf.result()).toBeNull();
  });

  it('When sampling between lags, then values interpolate linearly and clamp at the end', () => {
    const r = [1, 0.5, 0];
    expect(sampleAutocorrelation(r, 0.5)).toBeCloseTo(0.75, 12);
    expect(sampleAutocorrelation(r, 10)).toBe(0);
    expect(sampleAutocorrelation(r, -1)).toBe(1);
  });
});

describe(circularTempo.name, () => {
  it('When the tempo doubles, then the circular summary stays the same direction', () => {
    const a = circularTempo(trackAcf(clickTrack(120, 20)), 31.25);
    const b = circularTempo(trackAcf(clickTrack(60, 20)), 31.25);
    const angle = (v: [number, number]): number => Math.atan2(v[1], v[0]);
    expect(Math.hypot(...a)).toBeGreaterThan(0.2);
    // 60 and 120 BPM are one full turn apart: same angle up to estimation noise.
    expect(Math.abs(Math.sin(angle(a) - angle(b)))).toBeLessThan(0.3);
  });

  it('When 120 and 170 BPM are compared, then the directions differ', () => {
    const a = circularTempo(trackAcf(clickTrack(120, 20)), 31.25);
    const b = circularTempo(trackAcf(clickTrack(170, 20)), 31.25);
    expect(a[0] * b[0] + a[1] * b[1]).toBeLessThan(0.5 * Math.hypot(...a) * Math.hypot(...b));
  });

  it('When the autocorrelation has no positive value, then the summary is [0, 0]', () => {
    expect(circularTempo(new Float64Array(80).fill(-1), 31.25)).toEqual([0, 0]);
  });
});

function trackAcf(pcm: Float32Array): Float64Array {
  return onsetAutocorrelation(analyseAudio(pcm, 16000))!;
}
