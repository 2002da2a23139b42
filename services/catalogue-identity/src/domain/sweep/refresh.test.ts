import type { MappedRow } from './refresh';
import { planRefresh } from './refresh';
import type { RemoteDetails } from './remote-index';

const row = (itemId: string, providerId: string, over: Partial<MappedRow> = {}): MappedRow => ({ itemId, providerId, olderThanListing: true, itemDurationSeconds: 200, ...over });
const listing = (entries: Record<string, Partial<RemoteDetails>>) => (id: string): RemoteDetails | undefined => (entries[id] ? { providerId: id, artist: 'Band', ...entries[id] } : undefined);
const sweepOpts = { refreshMetadata: true, isDefault: false, prune: true, toleranceSeconds: 2 };

describe(planRefresh.name, () => {
  it('When mapped files are listed, then song metadata comes from the smallest listed provider id, the path only from the default server', () => {
    const listed = listing({
      b: { album: 'New Album', albumArtist: 'AA', year: 1999.4, rating: 4, path: '/srv/b.flac', artistId: 'ar' },
      c: { album: 'Other', path: '/srv/c.flac' },
    });
    const rows = [row('s1', 'a'), row('s1', 'b'), row('s1', 'c')];
    const plan = planRefresh(rows, listed, sweepOpts);
    expect(plan.scores).toEqual([{ itemId: 's1', album: 'New Album', albumArtist: 'AA', year: 1999, rating: 4, filePath: undefined }]);
    expect(plan.mappings.map((m) => [m.providerId, m.filePath, m.folder])).toEqual([
      ['b', '/srv/b.flac', '/srv'],
      ['c', '/srv/c.flac', '/srv'],
    ]);
    expect(plan.stale).toEqual(['a']);
    expect(planRefresh(rows, listed, { ...sweepOpts, isDefault: true }).scores[0]?.filePath).toBe('/srv/b.flac');
  });

  it('When the server does not speak for a song (held by the default or its source server), then its metadata is left alone while its own mapping rows are still refreshed', () => {
    const listed = listing({ b: { album: '[non-album tracks]', albumArtist: '[unknown]', path: '/srv/b.mp3', durationSeconds: 200 } });
    const plan = planRefresh([row('s1', 'b', { metadataAuthority: false })], listed, sweepOpts);
    expect(plan.scores).toEqual([]);
    expect(plan.mappings.map((m) => [m.providerId, m.filePath])).toEqual([['b', '/srv/b.mp3']]);
    expect(planRefresh([row('s1', 'b', { metadataAuthority: true })], listed, sweepOpts).scores).toEqual([{ itemId: 's1', album: '[non-album tracks]', albumArtist: '[unknown]', year: undefined, rating: undefined, filePath: undefined }]);
  });

  it('When a row is absent from the listing, then it is stale only when pruning is allowed and the row is older than the listing', () => {
    const listed = listing({});
    const rows = [row('s1', 'old'), row('s2', 'new', { olderThanListing: false })];
    expect(planRefresh(rows, listed, sweepOpts)).toMatchObject({ stale: ['old'], absent: 2, present: 0 });
    expect(planRefresh(rows, listed, { ...sweepOpts, prune: false }).stale).toEqual([]);
  });

  it('When a song has no duration, then it gets the listed one when its files agree within the tolerance, and mapping rows get theirs', () => {
    const rows = [row('s1', 'a', { itemDurationSeconds: null }), row('s1', 'b', { itemDurationSeconds: null }), row('s2', 'c', { itemDurationSeconds: null }), row('s2', 'd', { itemDurationSeconds: null })];
    const plan = planRefresh(rows, listing({ a: { durationSeconds: 100 }, b: { durationSeconds: 101 }, c: { durationSeconds: 100 }, d: { durationSeconds: 140 } }), sweepOpts);
    expect(plan.scoreDurations).toEqual([{ itemId: 's1', durationSeconds: 100 }]);
    expect(plan.mappings.map((m) => [m.providerId, m.durationSeconds])).toEqual([
      ['a', 100],
      ['b', 101],
      ['c', 100],
      ['d', 140],
    ]);
  });

  it('When a row was written after the listing started (by this sweep), then its song is refreshed but the row itself is not rewritten or pruned', () => {
    const plan = planRefresh([row('s1', 'new', { olderThanListing: false }), row('s2', 'fresh-gone', { olderThanListing: false })], listing({ new: { album: 'A', path: '/srv/new.flac' } }), sweepOpts);
    expect(plan.scores.map((s) => s.itemId)).toEqual(['s1']);
    expect(plan.mappings).toEqual([]);
    expect(plan.stale).toEqual([]);
  });

  it('When planning for the cleaning, then only stale rows are planned (nothing is refreshed or back-filled)', () => {
    const rows = [row('s1', 'a', { itemDurationSeconds: null }), row('s2', 'gone')];
    const plan = planRefresh(rows, listing({ a: { durationSeconds: 100, album: 'X' } }), { ...sweepOpts, refreshMetadata: false });
    expect(plan).toEqual({ scores: [], mappings: [], scoreDurations: [], stale: ['gone'], present: 1, absent: 1 });
  });
});
