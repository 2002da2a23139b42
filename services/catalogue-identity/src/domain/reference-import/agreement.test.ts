import type { PlanSong } from './plan';
import { AGREEMENT_THRESHOLD, agreementSample, cosine, summariseAgreement, type AgreementAnswer } from './agreement';

/** The import's agreement check without the worker: which songs are sampled, and how answers become the report. */
describe('agreement of imported vectors with polyphony (sample and report)', () => {
  const vec = (seed: number) => Float32Array.from({ length: 200 }, (_, i) => Math.sin(seed * (i + 1)) + 0.1 * seed);
  const song = (id: string, seed: number, files: Array<[string, string]>): PlanSong =>
    ({ refItemId: id, vector: vec(seed), files: files.map(([refServerId, providerId]) => ({ refServerId, providerId, filePath: null, matchTier: 'analysis' })) }) as unknown as PlanSong;

  it('When songs are sampled, then only those with a file on a polyphony server count, spread evenly by reference id, each with its first such file', () => {
    const songs = [
      song('fp_c', 3, [['gone', 'x-3'], ['S1', 'p-3']]),
      song('fp_a', 1, [['S1', 'p-1']]),
      song('fp_b', 2, [['gone', 'x-2']]),
      ...Array.from({ length: 20 }, (_, i) => song(`fp_z${String(i).padStart(2, '0')}`, 10 + i, [['S2', `q-${i}`]])),
    ];
    const servers = { S1: 'poly-1', S2: 'poly-2' };
    const all = agreementSample(songs.slice(0, 3), servers);
    expect(all.map((c) => [c.refItemId, c.serverId, c.providerId])).toEqual([
      ['fp_a', 'poly-1', 'p-1'],
      ['fp_c', 'poly-1', 'p-3'],
    ]);
    const five = agreementSample(songs, servers, 5);
    expect(five).toHaveLength(5);
    // 22 eligible, ordered fp_a, fp_c, fp_z00..fp_z19: indices 0, 4, 8, 13, 17
    expect(five.map((c) => c.refItemId)).toEqual(['fp_a', 'fp_z02', 'fp_z06', 'fp_z11', 'fp_z15']);
    expect(agreementSample(songs, {}, 5)).toEqual([]);
  });

  it('When the worker answers vectors that agree and ones that do not, then each cosine is reported, only the agreeing ones count, and failures keep their reason', () => {
    const cands = [1, 2, 3, 4].map((seed) => ({ refItemId: `fp_${seed}`, vector: vec(seed), serverId: 'poly-1', providerId: `p-${seed}` }));
    const noisy = Float32Array.from(vec(2), (x, i) => x + 0.02 * Math.cos(i));
    const answers: AgreementAnswer[] = [
      { vector: vec(1), patches: 40, precision: 'int8' }, // the same vector: cosine 1
      { vector: noisy, patches: 12, precision: 'int8' }, // nearly the same
      { vector: vec(7), patches: 30, precision: 'int8' }, // another song's vector: disagrees
      { error: 'Download of p-4 from "Supysonic" failed: 404' },
    ];
    const r = summariseAgreement(cands, answers);
    expect(r).toMatchObject({ status: 'measured', sampled: 4, threshold: AGREEMENT_THRESHOLD, agreeing: 2, precision: 'int8', failed: [{ ref_item_id: 'fp_4', reason: 'Download of p-4 from "Supysonic" failed: 404' }] });
    expect(r.songs.map((s) => [s.ref_item_id, s.patches])).toEqual([
      ['fp_1', 40],
      ['fp_2', 12],
      ['fp_3', 30],
    ]);
    expect(r.songs[0]!.cosine).toBe(1);
    expect(r.songs[1]!.cosine).toBeGreaterThanOrEqual(AGREEMENT_THRESHOLD);
    expect(r.songs[1]!.cosine).toBeLessThan(1);
    expect(r.songs[2]!.cosine).toBeLessThan(AGREEMENT_THRESHOLD);
    expect(r.min_cosine).toBe(r.songs[2]!.cosine);
    expect(r.median_cosine).toBe(r.songs[1]!.cosine);
  });

  it('When nothing could be compared, then the report is unavailable with the reason', () => {
    const cands = [{ refItemId: 'fp_1', vector: vec(1), serverId: 's', providerId: 'p' }];
    expect(summariseAgreement(cands, [{ error: 'The MusiCNN model is not loaded: not installed' }])).toMatchObject({ status: 'unavailable', reason: 'The MusiCNN model is not loaded: not installed', agreeing: 0, min_cosine: null, median_cosine: null, songs: [] });
    expect(summariseAgreement([], [])).toMatchObject({ status: 'unavailable', reason: 'no imported song has a file on a polyphony server', sampled: 0 });
    expect(cosine([1, 0], [0, 0])).toBe(0);
    expect(() => cosine([1], [1, 2])).toThrow(RangeError);
  });
});
