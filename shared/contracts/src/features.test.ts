import { AlchemyBody, FindPathQuery, MapQuery, SearchTracksQuery, SimilarArtistsQuery, SimilarTracksQuery, SyncQuery, TrackRowDto } from './features';

describe('feature query schemas', () => {
  it.each([
    [{ item_id: 'abc', n: '199' }, { item_id: 'abc', n: 199 }],
    [{ item_id: 'abc', n: '10', eliminate_duplicates: 'true', radius_similarity: 'TRUE' }, { item_id: 'abc', n: 10, eliminate_duplicates: true, radius_similarity: true }],
    [{ item_id: 'abc', eliminate_duplicates: '0', max_songs_per_artist: '0' }, { item_id: 'abc', eliminate_duplicates: false, max_songs_per_artist: 0 }],
    [{ title: 't', artist: 'a', n: '' }, { title: 't', artist: 'a' }],
  ])('When similar_tracks gets %j, then it parses to %j', (input, expected) => {
    const out = SimilarTracksQuery.parse(input);
    expect(out).toMatchObject(expected);
  });

  it.each([{ n: '0' }, { n: '1001' }, { n: 'abc' }, { n: '1.5' }, { eliminate_duplicates: 'maybe' }, { n: ['1', '2'] }])('When similar_tracks gets %j, then it is refused', (input) => {
    expect(SimilarTracksQuery.safeParse({ item_id: 'x', ...input }).success).toBe(false);
  });

  it('When plugins send parameters the schema does not know, then they pass through', () => {
    const q = FindPathQuery.parse({ start_song_id: 'a', end_song_id: 'b', count: '25', mood_pct: '100', path_fix_size: 'false', max_steps: '25' });
    expect(q).toMatchObject({ start_song_id: 'a', end_song_id: 'b', max_steps: 25, count: '25' });
    expect(SimilarArtistsQuery.parse({ artist: 'ar-1', ef_search: '100', include_component_matches: 'false' })).toMatchObject({ artist: 'ar-1', include_component_matches: false });
    expect(FindPathQuery.parse({ start_mood: ' Happy ', end_anchor: '3' })).toMatchObject({ start_mood: 'happy', end_anchor: '3' });
    expect(FindPathQuery.safeParse({ start_mood: 'grumpy' }).error?.issues[0]?.message).toMatch(/danceable, aggressive, happy, party, relaxed, sad/);
  });

  it('When alchemy items are sent in any case, with numeric ids and without a type, then they are normalised', () => {
    const b = AlchemyBody.parse({ items: [{ id: 12, op: 'add' }, { id: 'x', op: 'Subtract', type: 'Artist' }], n: 5 });
    expect(b.items).toEqual([
      { id: '12', op: 'ADD', type: 'song' },
      { id: 'x', op: 'SUBTRACT', type: 'artist' },
    ]);
    expect(AlchemyBody.safeParse({ items: [] }).success).toBe(false);
    expect(AlchemyBody.safeParse({ items: [{ id: 'a', op: 'ADD' }], temperature: -1 }).success).toBe(false);
  });

  it('When map, search and sync limits are exceeded, then they are refused', () => {
    expect(MapQuery.safeParse({ percent: '50' }).success).toBe(true);
    expect(MapQuery.safeParse({ percent: '40' }).success).toBe(false);
    expect(SearchTracksQuery.safeParse({ limit: '501' }).success).toBe(false);
    expect(SyncQuery.safeParse({ limit: '1001' }).success).toBe(false);
  });

  it('When search names an index, then only the known index names pass, with a message listing them', () => {
    expect(SearchTracksQuery.parse({ search_query: 'a', index: 'sem_grove' }).index).toBe('sem_grove');
    expect(SearchTracksQuery.parse({ search_query: 'a', index: '' }).index).toBeUndefined();
    const bad = SearchTracksQuery.safeParse({ search_query: 'a', index: 'clapx' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toMatch(/musicnn, clap, sem_grove, lyrics, neural/);
  });

  it('When sync gets a page number, then it is a positive integer', () => {
    expect(SyncQuery.parse({ page: '3', limit: '10' })).toMatchObject({ page: 3, limit: 10 });
    for (const page of ['0', '-1', 'x', '1.5']) expect(SyncQuery.safeParse({ page }).success).toBe(false);
  });

  it('When a result row has a null distance or a numeric id, then the row schema refuses it', () => {
    const ok = { item_id: '1', title: null, author: 'a', album: null, album_artist: null, distance: 0.1, mood_vector: 'rock:0.512,pop:0.301', other_features: null };
    expect(TrackRowDto.safeParse(ok).success).toBe(true);
    expect(TrackRowDto.safeParse({ ...ok, distance: null }).success).toBe(false);
    expect(TrackRowDto.safeParse({ ...ok, item_id: 1 }).success).toBe(false);
  });
});
