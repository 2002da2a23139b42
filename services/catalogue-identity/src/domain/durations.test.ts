import { planDurationBackfill } from './durations';

describe('planDurationBackfill', () => {
  it('When a listed file is mapped, then its mapping duration is planned; unmapped listing entries are ignored', () => {
    const plan = planDurationBackfill(
      [
        { providerId: 'a', durationSeconds: 100 },
        { providerId: 'zz', durationSeconds: 50 },
      ],
      [{ providerId: 'a', itemId: 'fp_1', itemDurationSeconds: 99.5 }],
      1,
    );
    expect(plan.mappingDurations).toEqual([{ providerId: 'a', durationSeconds: 100 }]);
    expect(plan.scoreDurations).toEqual([]);
  });

  it('When a song has no duration and its files agree, then it gets the smallest provider id file value', () => {
    const plan = planDurationBackfill(
      [
        { providerId: 'b', durationSeconds: 200.4 },
        { providerId: 'a', durationSeconds: 200 },
      ],
      [
        { providerId: 'b', itemId: 'fp_x', itemDurationSeconds: null },
        { providerId: 'a', itemId: 'fp_x', itemDurationSeconds: null },
      ],
      1,
    );
    expect(plan.scoreDurations).toEqual([{ itemId: 'fp_x', durationSeconds: 200 }]);
    expect(plan.conflictingItems).toEqual([]);
  });

  it('When the files of a song disagree beyond the tolerance, then the song stays unknown (in doubt, split)', () => {
    const plan = planDurationBackfill(
      [
        { providerId: 'a', durationSeconds: 200 },
        { providerId: 'b', durationSeconds: 203 },
      ],
      [
        { providerId: 'a', itemId: 'fp_x', itemDurationSeconds: Number.NaN },
        { providerId: 'b', itemId: 'fp_x', itemDurationSeconds: Number.NaN },
      ],
      1,
    );
    expect(plan.scoreDurations).toEqual([]);
    expect(plan.conflictingItems).toEqual(['fp_x']);
    expect(plan.mappingDurations).toHaveLength(2);
  });

  it('When entries are invalid or one id is listed with two values, then they are rejected and counted', () => {
    const plan = planDurationBackfill(
      [
        { providerId: 'neg', durationSeconds: -3 },
        { providerId: 'zero', durationSeconds: 0 },
        { providerId: 'nan', durationSeconds: Number.NaN },
        { providerId: 'dup', durationSeconds: 10 },
        { providerId: 'dup', durationSeconds: 10 },
        { providerId: 'clash', durationSeconds: 10 },
        { providerId: 'clash', durationSeconds: 11 },
        { providerId: 'clash', durationSeconds: 12 },
      ],
      ['neg', 'zero', 'nan', 'dup', 'clash'].map((p) => ({ providerId: p, itemId: `fp_${p}`, itemDurationSeconds: null })),
      1,
    );
    expect(plan.mappingDurations).toEqual([{ providerId: 'dup', durationSeconds: 10 }]);
    expect(plan.scoreDurations).toEqual([{ itemId: 'fp_dup', durationSeconds: 10 }]);
    expect(plan.rejectedEntries).toBe(6);
  });
});
