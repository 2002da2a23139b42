import { MSD_TAGS, MTT_TAGS, SnapshotPage } from '@polyphony/contracts';
import { SnapshotPageChecked } from './wire';

const msd = Array.from({ length: MSD_TAGS.length }, (_, i) => (i % 10) / 10);
const mtt = Array.from({ length: MTT_TAGS.length }, (_, i) => (i % 7) / 7);

/** A snapshot page of one song whose learned features carry `tags`. */
function page(tags: unknown): unknown {
  return {
    next: null,
    tracks: [
      {
        itemId: 'fp_1',
        embedding: 'AAAA',
        embedderVersion: 'v1',
        title: 'T',
        artist: 'A',
        album: null,
        albumArtist: null,
        year: null,
        rating: null,
        durationSeconds: null,
        tempo: 120,
        key: 'C',
        scale: 'major',
        energy: 0.1,
        learned: { tagsModel: 'm', tags, moodVector: 'rock:0.500', otherFeatures: '' },
        mappings: [],
      },
    ],
  };
}

describe('SnapshotPageChecked (tag probabilities checked by a loop)', () => {
  const cases: Array<[string, unknown, boolean]> = [
    ['msd only', { msd }, true],
    ['msd and mtt', { msd, mtt }, true],
    ['bounds 0 and 1', { msd: msd.map((_, i) => (i % 2 === 0 ? 0 : 1)) }, true],
    ['msd one short', { msd: msd.slice(1) }, false],
    ['msd one long', { msd: [...msd, 0.5] }, false],
    ['a value above 1', { msd: [1.0001, ...msd.slice(1)] }, false],
    ['a negative value', { msd: [...msd.slice(1), -0.001] }, false],
    ['a string value', { msd: ['0.5', ...msd.slice(1)] }, false],
    ['a null value', { msd: [null, ...msd.slice(1)] }, false],
    ['mtt of the wrong length', { msd, mtt: mtt.slice(2) }, false],
    ['mtt null', { msd, mtt: null }, false],
    ['no msd', { mtt }, false],
    ['tags an array', [msd], false],
    ['tags null', null, false],
    ['tags a string', 'x', false],
  ];
  it.each(cases)('When the tags are %s, then it accepts exactly what the contract schema accepts (%s)', (_name, tags, accepted) => {
    const body = page(tags);
    expect(SnapshotPage.safeParse(body).success).toBe(accepted);
    expect(SnapshotPageChecked.safeParse(body).success).toBe(accepted);
  });

  it('When the learned features are null or absent, then both accept the page; other fields are still checked', () => {
    const withNull = page({ msd }) as { tracks: Array<Record<string, unknown>> };
    withNull.tracks[0]!.learned = null;
    expect(SnapshotPageChecked.safeParse(withNull).success).toBe(true);
    delete withNull.tracks[0]!.learned;
    expect(SnapshotPageChecked.safeParse(withNull).success).toBe(true);
    const badMood = page({ msd }) as { tracks: Array<{ learned: { moodVector: string } }> };
    badMood.tracks[0]!.learned.moodVector = 'not a label score list';
    expect(SnapshotPage.safeParse(badMood).success).toBe(false);
    expect(SnapshotPageChecked.safeParse(badMood).success).toBe(false);
    expect(SnapshotPageChecked.parse(page({ msd, mtt })).tracks[0]!.learned!.tags).toEqual({ msd, mtt });
  });
});
