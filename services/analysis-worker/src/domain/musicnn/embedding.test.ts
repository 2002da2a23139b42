import { mulberry32 } from '@polyphony/vectors';
import { FUSION_V1 } from './embedding-constants';
import { FusionEmbedder, LEARNED_EMBEDDER_VERSION, dequantise, penultimateMean, quantise } from './embedding';

const rand = mulberry32(7);
const vec = (n: number, scale = 1) => Array.from({ length: n }, () => (rand() - 0.5) * scale);

describe('learned embedding (tfjs:musicnn-fusion-v1)', () => {
  it('When a projection is quantised to int8 rows, then it comes back within half a step of each row scale', () => {
    const rows = [vec(400, 0.2), vec(400, 3), new Array<number>(400).fill(0)];
    const back = dequantise(quantise(rows));
    rows.forEach((row, r) => {
      const max = Math.max(...row.map(Math.abs));
      row.forEach((x, c) => expect(Math.abs(back[r * 400 + c]! - x)).toBeLessThanOrEqual(max / 254 + 1e-7));
    });
    expect(() => dequantise({ ...quantise(rows), rows: 4 })).toThrow('values');
  });

  it('When the shipped constants embed a track, then the vector has 200 finite values, block norms w and 1 - w, and the version is the learned one', () => {
    const e = new FusionEmbedder();
    expect(e.version).toBe(LEARNED_EMBEDDER_VERSION);
    expect(FUSION_V1.pm.rows + FUSION_V1.pd.rows).toBe(200);
    const m = FUSION_V1.mMean.map((x, i) => x + FUSION_V1.mStd[i]! * (rand() - 0.5));
    const d = FUSION_V1.dMean.map((x, i) => x + FUSION_V1.dStd[i]! * (rand() - 0.5));
    const v = e.embed(m, d);
    expect(v).toHaveLength(200);
    expect(v.every(Number.isFinite)).toBe(true);
    const norm = (a: Float32Array) => Math.hypot(...a);
    expect(norm(v.subarray(0, FUSION_V1.pm.rows))).toBeCloseTo(FUSION_V1.w, 5);
    expect(norm(v.subarray(FUSION_V1.pm.rows))).toBeCloseTo(1 - FUSION_V1.w, 5);
    // Deterministic: the same inputs give the same vector (the identity gate relies on it).
    expect(Array.from(e.embed(m, d))).toEqual(Array.from(v));
  });

  it('When the analyser ran without the MTT network, then the learned embedding refuses (the worker then stays on dsp-v1)', () => {
    const msd = { patches: 2, tags: new Float32Array(100), penultimate: Float32Array.from(vec(400)) };
    expect(() => new FusionEmbedder().embedTrack({ starts: [0, 187], msd, melMs: 0, networkMs: 0, mttMs: 0 }, vec(200))).toThrow('MTT');
    const mean = penultimateMean(msd);
    expect(mean[3]).toBeCloseTo((msd.penultimate[3]! + msd.penultimate[203]!) / 2, 6);
  });

  it('When the constants do not add up to 200 values, then the embedder refuses them', () => {
    expect(() => new FusionEmbedder({ ...FUSION_V1, pd: quantise([vec(200)]) })).toThrow('do not give 200 values');
    expect(() => new FusionEmbedder({ ...FUSION_V1, mMean: [1] })).toThrow('wrong constant sizes');
  });
});
