export { buildPlaylist, type PlaylistService, type PlaylistDeps } from './app';
export { loadPlaylistConfig, type PlaylistConfig } from './config';
export { playlistMigrations } from './store/migrations';
