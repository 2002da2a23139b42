import { buildOpenApiDocument } from './openapi';
import { ClusteringStartBody, CreatePlaylistBody, PlaylistsResponse } from './playlists';

describe('playlist contracts', () => {
  it.each([
    [{ playlist_name: 'Mix', track_ids: ['a', 'b'] }, ['a', 'b']],
    [{ playlist_name: 'Mix', track_ids: [{ item_id: 'a', title: 'x' }, 'b', 12] }, ['a', 'b', '12']],
    [{ playlist_name: ' Mix ', item_ids: ['c'], server: 'Jelly', user_creds: { token: 't' } }, ['c']],
  ])('When a create_playlist body is valid (%j), then ids come out as strings', (body, ids) => {
    const r = CreatePlaylistBody.parse(body);
    expect(r.track_ids ?? r.item_ids).toEqual(ids);
    expect(r.playlist_name).toBe('Mix');
  });

  it.each([
    [{}],
    [{ playlist_name: 'Mix' }],
    [{ playlist_name: '', track_ids: ['a'] }],
    [{ playlist_name: 'Mix', track_ids: [] }],
    [{ playlist_name: 'Mix', track_ids: 'a,b' }],
    [{ playlist_name: 'Mix', track_ids: [{ id: 'a' }] }],
    [{ playlist_name: 'Mix', track_ids: [''] }],
    [{ playlist_name: 'x'.repeat(201), track_ids: ['a'] }],
  ])('When a create_playlist body is malformed (%j), then it is refused', (body) => {
    expect(CreatePlaylistBody.safeParse(body).success).toBe(false);
  });

  it.each([
    [{}, {}],
    [{ num_clusters: 5, max_songs_per_playlist: 50 }, { num_clusters: 5, max_songs_per_playlist: 50 }],
    [{ k: '7', num_clusters_min: null }, { k: 7, num_clusters_min: undefined }],
    [{ clustering_method: 'kmeans', ai_model_provider: 'NONE', num_clusters_min: 40, num_clusters_max: 100 }, { num_clusters_min: 40, num_clusters_max: 100 }],
  ])('When a clustering body is valid (%j), then the validated fields parse', (body, expected) => {
    expect(ClusteringStartBody.parse(body)).toMatchObject(expected);
  });

  it.each([[{ num_clusters: 1 }], [{ k: 201 }], [{ num_clusters: 'many' }], [{ max_songs_per_playlist: 0 }], [{ num_clusters_min: 50, num_clusters_max: 10 }], [{ top_n_playlists: 2.5 }]])(
    'When a clustering body is out of range (%j), then it is refused',
    (body) => {
      expect(ClusteringStartBody.safeParse(body).success).toBe(false);
    },
  );

  it('When a playlists answer is checked, then multi_server must be true and tracks carry string ids', () => {
    const ok = { multi_server: true, servers: [{ server_id: 's', server_name: 'S', is_default: true, playlists: { Mix_instant: [{ item_id: '1', title: 't', author: 'a' }] } }] };
    expect(PlaylistsResponse.safeParse(ok).success).toBe(true);
    expect(PlaylistsResponse.safeParse({ ...ok, multi_server: false }).success).toBe(false);
  });

  it('When the OpenAPI document is built, then the three playlist routes are in it', () => {
    const doc = buildOpenApiDocument('test');
    expect(doc.paths['/api/create_playlist']?.post?.responses).toHaveProperty('201');
    expect(doc.paths['/api/playlists']?.get).toBeDefined();
    expect(doc.paths['/api/clustering/start']?.post?.responses).toHaveProperty('202');
  });
});
