import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';

export type PlaylistConfig = ServiceConfig;

/** Playlist service configuration: connection settings only (tunables live in its settings table). */
export function loadPlaylistConfig(env: Record<string, string | undefined> = readEnv()): PlaylistConfig {
  return loadServiceConfig('playlist', 'playlist', env);
}
