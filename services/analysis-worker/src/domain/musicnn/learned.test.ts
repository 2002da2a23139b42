import { MSD_TAGS, MTT_TAGS, parseLabelScores } from '@polyphony/contracts';
import { learnedFeatures, otherFeatures, trackTags } from './learned';
import { MUSICNN_INPUT, patchStarts, patchTensorData } from './mel';
import type { MusicnnTrackOutputs } from './analyser';

function outputs(patchProbs: number[][]): MusicnnTrackOutputs['msd'] {
  return { patches: patchProbs.length, tags: Float32Array.from(patchProbs.flat()), penultimate: new Float32Array(patchProbs.length * 200) };
}

describe('learned features from network outputs', () => {
  it('When patches are averaged, then the track tags are the mean probabilities and the mood vector lists the top 5 MSD tags', () => {
    const a = new Array<number>(50).fill(0.01);
    const b = new Array<number>(50).fill(0.03);
    a[MSD_TAGS.indexOf('ambient')] = 0.9;
    b[MSD_TAGS.indexOf('ambient')] = 0.7;
    b[MSD_TAGS.indexOf('instrumental')] = 0.5;
    const out: MusicnnTrackOutputs = { starts: [0, 187], msd: outputs([a, b]), melMs: 0, networkMs: 0, mttMs: 0 };
    expect(trackTags(out.msd)[MSD_TAGS.indexOf('ambient')]).toBeCloseTo(0.8, 6);
    const f = learnedFeatures(out, 'musicnn-msd@x');
    const moods = parseLabelScores(f.moodVector)!;
    expect(moods.slice(0, 2)).toEqual([['ambient', 0.8], ['instrumental', 0.255]]);
    expect(moods).toHaveLength(5);
    expect(f.tags.mtt).toBeUndefined();
  });

  it('When TOP_N_MOODS is set to 3 or 12, then the mood vector keeps that many MSD tags, highest first', () => {
    const probs = MSD_TAGS.map((_, i) => (i + 1) / 100);
    const out: MusicnnTrackOutputs = { starts: [0], msd: outputs([probs]), melMs: 0, networkMs: 0, mttMs: 0 };
    const three = parseLabelScores(learnedFeatures(out, 'm', 3).moodVector)!;
    expect(three.map(([label]) => label)).toEqual([MSD_TAGS[49], MSD_TAGS[48], MSD_TAGS[47]]);
    expect(parseLabelScores(learnedFeatures(out, 'm', 12).moodVector)).toHaveLength(12);
  });

  it('When other features are derived, then each is the noisy-OR of its tags, MTT tags only with the MTT model', () => {
    const msd = new Array<number>(50).fill(0);
    const mtt = new Array<number>(50).fill(0);
    msd[MSD_TAGS.indexOf('chillout')] = 0.5;
    msd[MSD_TAGS.indexOf('Mellow')] = 0.5;
    mtt[MTT_TAGS.indexOf('soft')] = 0.5;
    msd[MSD_TAGS.indexOf('sad')] = 0.2;
    const withoutMtt = new Map(otherFeatures(msd));
    expect(withoutMtt.get('relaxed')).toBeCloseTo(0.75, 9);
    expect(withoutMtt.get('sad')).toBeCloseTo(0.2, 9);
    expect(withoutMtt.get('aggressive')).toBe(0);
    expect(new Map(otherFeatures(msd, mtt)).get('relaxed')).toBeCloseTo(0.875, 9);
  });
});

describe('patch selection', () => {
  it('When a track has more patches than the budget, then the budget is spread evenly from first to last patch', () => {
    const p = MUSICNN_INPUT.patchFrames;
    expect(patchStarts(10 * p + 5)).toEqual(Array.from({ length: 10 }, (_, i) => i * p));
    expect(patchStarts(10 * p, 4)).toEqual([0, 3 * p, 6 * p, 9 * p]);
    expect(patchStarts(10 * p, 1)).toEqual([4 * p]);
    expect(patchStarts(50)).toEqual([0]);
  });

  it('When the audio is shorter than a patch, then its frames are tiled to fill it', () => {
    const mel = { frames: 2, data: Float32Array.from({ length: 2 * 96 }, (_, i) => (i < 96 ? 1 : 2)) };
    const data = patchTensorData(mel, [0]);
    expect(data.length).toBe(187 * 96);
    expect(data[0]).toBe(1);
    expect(data[96]).toBe(2);
    expect(data[2 * 96]).toBe(1);
  });
});
