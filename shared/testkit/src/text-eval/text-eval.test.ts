import { MSD_TAGS, MTT_TAGS } from '@polyphony/contracts';
import { EVAL_QUERIES, evaluateTextSearch, precisionAt, relevantIds, type EvalSong } from './text-eval';

describe('text-search evaluation (precision@10 with tag-derived ground truth)', () => {
  /** 50 songs; song i has "sad" = i/50 and "piano" = (49 - i)/50 except songs 40-44, which are high on both. */
  const songs: EvalSong[] = Array.from({ length: 50 }, (_, i) => {
    const msd = MSD_TAGS.map(() => 0.1);
    const mtt = MTT_TAGS.map(() => 0.1);
    msd[MSD_TAGS.indexOf('sad')] = i / 50;
    mtt[MTT_TAGS.indexOf('piano')] = i >= 40 && i < 45 ? 0.9 + i / 1000 : (49 - i) / 50;
    return { id: `s${i}`, msd, mtt, other: [0, 0, 0, 0, 0, 0] };
  });

  it('When a query has several label groups, then a song is relevant only in the top 20% of every group', () => {
    const sadPiano = relevantIds(songs, { query: 'sad piano', groups: [['sad'], ['piano']] });
    expect([...sadPiano].sort()).toEqual(['s40', 's41', 's42', 's43', 's44']);
    const sad = relevantIds(songs, { query: 'sad', groups: [['sad']] });
    expect(sad.size).toBe(10);
    expect(sad.has('s49')).toBe(true);
    expect(sad.has('s38')).toBe(false);
  });

  it('When results are ranked, then P@10 counts relevant ids among the first 10 and short lists count misses', async () => {
    const rel = new Set(['a', 'b', 'c']);
    expect(precisionAt(10, ['a', 'x', 'b'], rel)).toBeCloseTo(0.2);
    expect(precisionAt(10, [...'abcdefghijkl'], rel)).toBeCloseTo(0.3);
    const report = await evaluateTextSearch(songs, async (q) => (q === 'sad piano' ? ['s40', 's41', 's1', 's42'] : []), [
      { query: 'sad piano', groups: [['sad'], ['piano']] },
      { query: 'nothing relevant', groups: [['sad'], ['piano'], ['rock']] },
    ]);
    expect(report.queries).toEqual([{ query: 'sad piano', relevant: 5, returned: 4, hits: 3, precision: 0.3, ideal: 0.5, random: 0.1 }]);
    expect(report.meanPrecision).toBeCloseTo(0.3);
    expect(report.skipped).toEqual(['nothing relevant']);
  });

  it('When the evaluation queries are read, then every ground-truth label is a MusiCNN or other-feature label', () => {
    for (const q of EVAL_QUERIES) expect(() => relevantIds(songs, q)).not.toThrow();
    expect(() => relevantIds(songs, { query: 'x', groups: [['not a tag']] })).toThrow(/Unknown MusiCNN label/);
  });
});
