export { buildPlaylist, type PlaylistService, type PlaylistDeps } from './app';
export { loadPlaylistConfig, type PlaylistConfig } from './config';
export { playlistMigrations } from './store/migrations';
/** The k rule of the clustering (round(sqrt(n / 2)) clamped to the configured range) and its default range, for tools outside the service (the k-means benchmark). */
export { chooseK, DEFAULT_MAX_CLUSTERS, DEFAULT_MIN_CLUSTERS } from './domain/clustering-params';
