import { computeDescriptors, energyOf } from './descriptors';
import { sines } from './__tests__/signals';

describe(energyOf.name, () => {
  it('When the input is a full-scale sine (-3 dB RMS), then energy is (60 - 3) / 60', () => {
    expect(energyOf(sines([[440, 1]], 2))).toBeCloseTo(57 / 60, 2);
  });

  it('When the input is a -30 dB sine, then energy is about 0.5 - 3/60', () => {
    expect(energyOf(sines([[440, Math.pow(10, -30 / 20)]], 2))).toBeCloseTo(27 / 60, 2);
  });

  it('When the input is silent or empty, then energy is 0', () => {
    expect(energyOf(new Float32Array(32000))).toBe(0);
    expect(energyOf(new Float32Array(0))).toBe(0);
  });
});

describe(computeDescriptors.name, () => {
  it('When an A minor triad plays, then the key is A minor or its relative C major', () => {
    const d = computeDescriptors(sines([[220, 0.3], [261.63, 0.3], [329.63, 0.3]], 5), 16000);
    expect(['A minor', 'C major']).toContain(`${d.key} ${d.scale}`);
    expect(d.keyStrength).toBeGreaterThan(0.5);
  });

  it('When the input is silent, then tempo is null and key falls back to C major', () => {
    const d = computeDescriptors(new Float32Array(16000 * 5), 16000);
    expect(d).toMatchObject({ tempoBpm: null, key: 'C', scale: 'major', energy: 0 });
  });
});
