import { LearnedFeatures, MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, formatLabelScores, moodVectorOf, parseLabelScores } from './learned';

describe('learned feature contract', () => {
  it('When the label lists are read, then they have the published sizes and the model README order at both ends', () => {
    expect(MSD_TAGS).toHaveLength(50);
    expect(MTT_TAGS).toHaveLength(50);
    expect(new Set(MSD_TAGS).size).toBe(50);
    expect([MSD_TAGS[0], MSD_TAGS[23], MSD_TAGS[33], MSD_TAGS[49]]).toEqual(['rock', 'instrumental', 'Hip-Hop', 'happy']);
    expect([MTT_TAGS[0], MTT_TAGS[21], MTT_TAGS[49]]).toEqual(['guitar', 'no vocals', 'choral']);
    expect(OTHER_FEATURE_LABELS).toEqual(['danceable', 'aggressive', 'happy', 'party', 'relaxed', 'sad']);
  });

  it('When scores are formatted and parsed, then labels with spaces and hyphens survive with 3 decimals', () => {
    const s = formatLabelScores([['female vocalists', 0.12345], ['Hip-Hop', 1], ['sad', 0]]);
    expect(s).toBe('female vocalists:0.123,Hip-Hop:1.000,sad:0.000');
    expect(parseLabelScores(s)).toEqual([['female vocalists', 0.123], ['Hip-Hop', 1], ['sad', 0]]);
    expect(parseLabelScores('')).toEqual([]);
    for (const bad of ['rock', 'rock:', ':0.5', 'rock:1.2', 'rock:-0.1', 'rock:abc', 'a:b:0.5']) expect(parseLabelScores(bad)).toBeNull();
  });

  it('When a mood vector is built, then it is the 5 highest MSD tags, highest first, ties in list order', () => {
    const msd = MSD_TAGS.map(() => 0.01);
    msd[28] = 0.8;
    msd[23] = 0.9;
    msd[12] = 0.3;
    msd[10] = 0.3;
    expect(moodVectorOf(msd)).toBe('instrumental:0.900,ambient:0.800,beautiful:0.300,chillout:0.300,rock:0.010');
  });

  it('When learned features are validated, then wrong lengths, out-of-range values and malformed strings are refused', () => {
    const msd = MSD_TAGS.map(() => 0.5);
    const ok = { tagsModel: 'm', tags: { msd, mtt: MTT_TAGS.map(() => 0.1) }, moodVector: moodVectorOf(msd), otherFeatures: 'happy:0.500' };
    expect(LearnedFeatures.safeParse(ok).success).toBe(true);
    expect(LearnedFeatures.safeParse({ ...ok, tags: { msd: msd.slice(1) } }).success).toBe(false);
    expect(LearnedFeatures.safeParse({ ...ok, tags: { msd, mtt: [0.1] } }).success).toBe(false);
    expect(LearnedFeatures.safeParse({ ...ok, tags: { msd: msd.map(() => NaN) } }).success).toBe(false);
    expect(LearnedFeatures.safeParse({ ...ok, moodVector: 'rock 0.5' }).success).toBe(false);
    expect(LearnedFeatures.safeParse({ ...ok, tagsModel: '' }).success).toBe(false);
  });
});
