import type { ProviderTrack } from '@polyphony/media-servers';
import { SweepMatcher, pruneAllowed, type LocalSong } from './matcher';
import { discTrackOf, exactMetaKey, hashKey, normMeta, normMetaKey, normalizePath, pathTail } from './normalize';
import { RemoteIndex } from './remote-index';

const remoteTrack = (id: string, over: Partial<ProviderTrack> = {}): ProviderTrack => ({ id, title: `Song ${id}`, artist: 'Band', album: 'Album', ...over });
const local = (itemId: string, over: Partial<LocalSong> = {}): LocalSong => ({ itemId, title: `Song ${itemId}`, artist: 'Band', album: 'Album', paths: [], ...over });

describe('sweep key normalisation', () => {
  it('When paths differ by URL encoding, separators, case and mount prefix, then they normalise alike', () => {
    expect(normalizePath('file:///mnt/media/music/Band/Album%20One/01%20Song.flac')).toBe('band/album one/01 song.flac');
    expect(normalizePath('/media/music/Band/Album One/01 Song.flac')).toBe('band/album one/01 song.flac');
    expect(normalizePath('D:\\Music\\Band\\Album One\\01 Song.flac')).toBe('band/album one/01 song.flac');
    expect(normalizePath('/srv/music/Band/Album One/01 Song.flac')).toBe('band/album one/01 song.flac');
    expect(normalizePath(undefined)).toBe('');
  });

  it('When a path has few components, then the tail is empty (a bare file name is too weak)', () => {
    expect(pathTail('a/b/c/d.flac')).toBe('b/c/d.flac');
    expect(pathTail('d.flac')).toBe('');
  });

  it('When titles carry noise in brackets or a leading "the", then the normalised key ignores it', () => {
    expect(normMeta('Song (Remastered 2011)')).toBe('song');
    expect(normMeta('Song [Live at Wembley]')).toBe('song');
    expect(normMeta('Song (feat. Someone)')).toBe('song');
    expect(normMeta('The Beatles')).toBe('beatles');
    expect(normMeta('Song (Part 2)')).toBe('song part 2');
    expect(normMetaKey('Song (Live)', 'The Band', 'Album')).toBe(normMetaKey('song', 'band', 'ALBUM'));
    expect(exactMetaKey('Song', 'Band', undefined)).toBe('');
    expect(exactMetaKey('Café', 'Band', 'A')).toBe(exactMetaKey('cafe', 'band', 'a'));
  });

  it('When a file name starts with two numbers, then they are its (disc, track); anything else has none', () => {
    expect(discTrackOf('/music/Band/Double/1-03 Song.flac')).toBe('1.3');
    expect(discTrackOf('02.11_title.mp3')).toBe('2.11');
    expect(discTrackOf('C:\\Music\\01 - 07 Song.flac')).toBe('1.7');
    expect(discTrackOf('/music/03 - Song.flac')).toBe('');
    expect(discTrackOf('/music/1-03/Song.flac')).toBe('');
    expect(discTrackOf(undefined)).toBe('');
  });

  it('When different keys are hashed, then they do not collide (53-bit hash)', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200_000; i++) seen.add(hashKey(`key-${i}`));
    expect(seen.size).toBe(200_000);
  });
});

describe(SweepMatcher.name, () => {
  it('When each tier is the first that matches, then the song maps with that tier, in tier order', () => {
    const r = new RemoteIndex();
    r.add([
      remoteTrack('p1', { path: '/mnt/music/Band/Album/01 a.flac', title: 'X1' }),
      remoteTrack('p2', { path: '/other/root/deep/Band/Album/02 b.flac', title: 'X2' }),
      remoteTrack('p3', { title: 'Exact', artist: 'Band', album: 'Album' }),
      remoteTrack('p4', { title: 'Norm (Remastered)', artist: 'The Band', album: 'Album' }),
    ]);
    const m = new SweepMatcher(r, new Set(), new Set());
    const { write } = m.matchChunk([
      local('i1', { paths: ['/media/Band/Album/01 a.flac'] }),
      local('i2', { paths: ['/x/y/Band/Album/02 b.flac'] }),
      local('i3', { title: 'exact' }),
      local('i4', { title: 'Norm', artist: 'Band' }),
      local('i5', { title: 'Nothing like it' }),
    ]);
    expect(write.map((w) => [w.itemId, w.providerId, w.tier]).sort()).toEqual([
      ['i1', 'p1', 'path'],
      ['i2', 'p2', 'tail'],
      ['i3', 'p3', 'exact_meta'],
      ['i4', 'p4', 'norm_meta'],
    ]);
  });

  it('When two remote tracks share a metadata key, then the song is not matched (ambiguous, never guessed)', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'Same' }), remoteTrack('p2', { title: 'Same' })]);
    const { write } = new SweepMatcher(r, new Set(), new Set()).matchChunk([local('i1', { title: 'Same' })]);
    expect(write).toEqual([]);
  });

  it('When two local songs claim one remote track at the same tier, then neither is written, even across chunks', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'Twin' })]);
    const m = new SweepMatcher(r, new Set(), new Set());
    const first = m.matchChunk([local('i1', { title: 'Twin' })]);
    expect(first.write).toHaveLength(1);
    const second = m.matchChunk([local('i2', { title: 'Twin' })]);
    expect(second.write).toEqual([]);
    expect(second.retract).toEqual([expect.objectContaining({ itemId: 'i1', providerId: 'p1' })]);
    expect(m.matched).toBe(0);
  });

  it('When a later chunk has strictly better evidence, then it takes the remote track over', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'Song', path: '/music/Band/Album/song.flac' })]);
    const m = new SweepMatcher(r, new Set(), new Set());
    expect(m.matchChunk([local('meta', { title: 'Song' })]).write[0]?.tier).toBe('exact_meta');
    const later = m.matchChunk([local('byPath', { title: 'Other', paths: ['/data/Band/Album/song.flac'] })]);
    expect(later.write).toEqual([expect.objectContaining({ itemId: 'byPath', tier: 'path' })]);
    expect(later.retract).toEqual([expect.objectContaining({ itemId: 'meta' })]);
  });

  it('When the provider id or the song is already mapped on the server, then it is left alone', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'A' }), remoteTrack('p2', { title: 'B' })]);
    const { write } = new SweepMatcher(r, new Set(['p1']), new Set(['i2'])).matchChunk([local('i1', { title: 'A' }), local('i2', { title: 'B' })]);
    expect(write).toEqual([]);
  });

  it('When the library moved to another mount prefix, then paths still match', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'Renamed on server', path: 'file:///volume1/music/Band/Album/01%20Song.mp3' })]);
    const { write } = new SweepMatcher(r, new Set(), new Set()).matchChunk([local('i1', { title: 'Song', paths: ['/mnt/media/music/Band/Album/01 Song.mp3'] })]);
    expect(write).toEqual([expect.objectContaining({ itemId: 'i1', tier: 'path' })]);
  });

  it('When remote tracks share a metadata key, then the (disc, track) of the song\'s file name picks one of them', () => {
    const r = new RemoteIndex();
    r.add([
      remoteTrack('d1', { title: 'Intro', album: 'Double', path: '/srv/Band/Double/1-01 Intro.flac' }),
      remoteTrack('d2', { title: 'Intro', album: 'Double', path: '/srv/Band/Double/2-01 Intro.flac' }),
    ]);
    const m = new SweepMatcher(r, new Set(), new Set());
    const { write } = m.matchChunk([
      local('disc2', { title: 'Intro', album: 'Double', paths: ['/old/x/2-01 Intro.mp3'] }),
      local('noDt', { title: 'Intro', album: 'Double', paths: ['/old/x/Intro.mp3'] }),
    ]);
    expect(write).toEqual([expect.objectContaining({ itemId: 'disc2', providerId: 'd2', tier: 'exact_meta' })]);
    expect(m.conflicts).toBe(1);
  });

  it('When two songs claim one remote track on metadata, then the one whose (disc, track) matches the remote file wins, in any chunk order', () => {
    const build = () => {
      const r = new RemoteIndex();
      r.add([remoteTrack('e', { title: 'Echo', path: '/srv/Band/Album/1-04 Echo.flac' })]);
      return new SweepMatcher(r, new Set(), new Set());
    };
    const a = local('dt3', { title: 'Echo', paths: ['/x/1-03 Echo.mp3'] });
    const b = local('dt4', { title: 'Echo', paths: ['/x/1-04 Echo.mp3'] });
    const first = build();
    first.matchChunk([a]);
    const later = first.matchChunk([b]);
    expect(later.write).toEqual([expect.objectContaining({ itemId: 'dt4' })]);
    expect(later.retract).toEqual([expect.objectContaining({ itemId: 'dt3' })]);
    const second = build();
    second.matchChunk([b]);
    expect(second.matchChunk([a])).toEqual({ write: [], retract: [] });
    expect(second.matched).toBe(1);
  });

  it('When a song\'s paths name different remote tracks, then it is not matched at all', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('x', { title: 'A', path: '/srv/Band/Album/a.flac' }), remoteTrack('y', { title: 'B', path: '/srv/Band/Album/b.flac' })]);
    const m = new SweepMatcher(r, new Set(), new Set());
    expect(m.matchChunk([local('both', { title: 'A', paths: ['/mnt/music/Band/Album/a.flac', '/data/Band/Album/b.flac'] })]).write).toEqual([]);
    expect(m.conflicts).toBe(1);
  });

  it('When provider ids are flagged as mapped in the index, then the matcher leaves them alone', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('p1', { title: 'A' }), remoteTrack('p2', { title: 'B' })]);
    expect(r.markMapped('p1')).toBe(true);
    expect(r.markMapped('gone')).toBe(false);
    const { write } = new SweepMatcher(r, r.mappedView(), new Set()).matchChunk([local('i1', { title: 'A' }), local('i2', { title: 'B' })]);
    expect(write.map((w) => w.providerId)).toEqual(['p2']);
  });

  it('When artists are listed, then each provider artist id keeps its first name', () => {
    const r = new RemoteIndex();
    r.add([remoteTrack('1', { artistId: 'ar1', artist: 'One' }), remoteTrack('2', { artistId: 'ar1', artist: 'One (alias)' }), remoteTrack('3', { artist: 'No Id' })]);
    expect([...r.artistLinks()]).toEqual([['ar1', 'One']]);
  });

  it('When the fetch holds fewer tracks than half the stored mappings, then pruning is refused (exactly half is allowed)', () => {
    expect(pruneAllowed(49, 100)).toBe(false);
    expect(pruneAllowed(50, 100)).toBe(true);
    expect(pruneAllowed(0, 0)).toBe(true);
  });
});
