import type { ProviderTrack } from '@polyphony/media-servers';
import { SweepMatcher, pruneAllowed, type LocalSong } from './matcher';
import { exactMetaKey, hashKey, normMeta, normMetaKey, normalizePath, pathTail } from './normalize';
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

  it('When the fetch holds fewer tracks than half the stored mappings, then pruning is refused (exactly half is allowed)', () => {
    expect(pruneAllowed(49, 100)).toBe(false);
    expect(pruneAllowed(50, 100)).toBe(true);
    expect(pruneAllowed(0, 0)).toBe(true);
  });
});
