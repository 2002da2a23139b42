import { BROWSE_COUNT_CAP, UNANALYZABLE_REASONS, type AnalysisTrackRequested } from '@polyphony/contracts';
import { ExclusionService } from './exclusions.service';
import type { ExclusionStore } from './ports';
import { metadataHash } from './track-processor';

type Track = AnalysisTrackRequested['track'];
const track: Track = { id: 'p1', title: 'Rain', artist: 'Nobody', album: 'Weather', durationSeconds: 181, path: 'music/rain.ogg' } as Track;

describe('exclusions: a file is not retried until its metadata changes (metadataHash)', () => {
  it('When the same metadata is listed again, then the hash is the same (the run skips the file)', () => {
    expect(metadataHash({ ...track })).toBe(metadataHash(track));
  });
  it.each([
    ['title', { title: 'Rain (fixed)' }],
    ['artist', { artist: 'Somebody' }],
    ['duration', { durationSeconds: 182 }],
  ])('When the %s changes, then the hash changes (the file is analysed again)', (_what, change) => {
    expect(metadataHash({ ...track, ...change } as Track)).not.toBe(metadataHash(track));
  });
});

describe('ExclusionService.page (browse kind=unanalyzable)', () => {
  const row = (i: number) => ({ item_id: `p${i}`, server_id: 's', title: null, author: null, album: null, path: null, duration: null, reason_code: 'too_short' as const, detail: 'Audio of 0.4 s is too short', excluded_at: '2026-01-01T00:00:00.000Z' });
  const store = (n: number, counted: number) => {
    const asked: unknown[] = [];
    const s = {
      unanalyzable: async (...a: unknown[]) => (asked.push(a), Array.from({ length: n }, (_, i) => row(i))),
      countUnanalyzable: async () => counted,
    } as unknown as ExclusionStore;
    return { s, asked };
  };

  it('When a page is full and one more row exists, then has_more is set, the 101st row is cut and each row has its readable reason', async () => {
    const { s, asked } = store(101, 150);
    const r = await new ExclusionService(s).page({ page: 2, q: '  blip ', server_id: 's' });
    expect(asked).toEqual([['s', 'blip', 101, 100]]);
    expect(r).toMatchObject({ has_more: true, capped: false, total: 150 });
    expect(r.results).toHaveLength(100);
    expect(r.results[0]).toMatchObject({ reason_code: 'too_short', reason: UNANALYZABLE_REASONS.too_short });
  });

  it('When more rows than the cap match, then total is the cap and capped is set', async () => {
    const r = await new ExclusionService(store(3, BROWSE_COUNT_CAP + 1).s).page({ page: 1 });
    expect(r).toMatchObject({ has_more: false, capped: true, total: BROWSE_COUNT_CAP });
  });
});
