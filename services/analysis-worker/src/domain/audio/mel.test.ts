import { dctIIMatrix, hzToMel, MelFilterbank, melToHz } from './mel';

describe('mel scale', () => {
  it('When converting on the Slaney scale, then 1 kHz is 15 mels and the log part steps ln(6.4)/27', () => {
    expect(hzToMel(1000)).toBeCloseTo(15, 12);
    expect(hzToMel(200)).toBeCloseTo(3, 12);
    expect(hzToMel(6400) - hzToMel(1000)).toBeCloseTo(27, 9);
  });

  it('When converting on the HTK scale, then 1 kHz is about 1000 mels', () => {
    expect(hzToMel(1000, true)).toBeCloseTo(999.99, 1);
  });

  it.each([false, true])('When converting back and forth (htk=%p), then Hz round-trips', (htk) => {
    for (const hz of [0, 30, 440, 999, 1000, 1001, 4000, 8000]) expect(melToHz(hzToMel(hz, htk), htk)).toBeCloseTo(hz, 6);
  });
});

describe(MelFilterbank.name, () => {
  it('When filters have unit height, then they sum to 1 between the first and the last centre', () => {
    const bank = new MelFilterbank({ sampleRate: 16000, nFft: 1024, nMels: 40, fMin: 0, fMax: 8000, norm: 'none' });
    const first = bank.centresHz[0]!;
    const last = bank.centresHz[bank.nMels - 1]!;
    let checked = 0;
    for (let k = 0; k < bank.nBins; k++) {
      const f = (k * 16000) / 1024;
      if (f < first || f > last) continue;
      let sum = 0;
      for (let b = 0; b < bank.nMels; b++) sum += bank.weight(b, k);
      expect(sum).toBeCloseTo(1, 9);
      checked++;
    }
    expect(checked).toBeGreaterThan(400);
  });

  it('When filters are Slaney-normalised, then wide filters have unit area in Hz', () => {
    const bank = new MelFilterbank({ sampleRate: 16000, nFft: 1024, nMels: 64, fMin: 30, fMax: 8000, norm: 'slaney' });
    const binHz = 16000 / 1024;
    // Filters above ~2 kHz span many bins, so the Riemann sum approximates the integral well.
    for (let b = 45; b < 62; b++) {
      let area = 0;
      for (let k = 0; k < bank.nBins; k++) area += bank.weight(b, k) * binHz;
      expect(area).toBeGreaterThan(0.95);
      expect(area).toBeLessThan(1.05);
    }
  });

  it('When applied to a spectrum, then the sparse product equals the dense one', () => {
    const bank = new MelFilterbank({ sampleRate: 16000, nFft: 512, nMels: 24 });
    const spectrum = Float64Array.from({ length: bank.nBins }, (_, k) => 1 + Math.sin(k));
    const out = new Float64Array(24);
    bank.apply(spectrum, out);
    for (let b = 0; b < 24; b++) {
      let dense = 0;
      for (let k = 0; k < bank.nBins; k++) dense += bank.weight(b, k) * spectrum[k]!;
      expect(out[b]).toBeCloseTo(dense, 12);
    }
  });

  it('When the range is invalid, then the constructor throws', () => {
    expect(() => new MelFilterbank({ sampleRate: 16000, nFft: 512, nMels: 10, fMin: 100, fMax: 9000 })).toThrow(RangeError);
    expect(() => new MelFilterbank({ sampleRate: 16000, nFft: 512, nMels: 10, fMin: 500, fMax: 400 })).toThrow(RangeError);
  });
});

describe('dctIIMatrix', () => {
  it('When square, then the orthonormal DCT-II matrix is orthogonal', () => {
    const n = 16;
    const m = dctIIMatrix(n, n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let dot = 0;
        for (let k = 0; k < n; k++) dot += m[i * n + k]! * m[j * n + k]!;
        expect(dot).toBeCloseTo(i === j ? 1 : 0, 12);
      }
    }
  });

  it('When applied to a constant, then only coefficient 0 is non-zero (sqrt(n) * value)', () => {
    const n = 8;
    const m = dctIIMatrix(n, 4);
    for (let j = 0; j < 4; j++) {
      let acc = 0;
      for (let i = 0; i < n; i++) acc += m[j * n + i]! * 2;
      expect(acc).toBeCloseTo(j === 0 ? 2 * Math.sqrt(n) : 0, 12);
    }
  });
});
