import { ServiceRuntime, type RuntimeDeps } from '@polyphony/platform';
import type { PlaylistConfig } from './config';
import { playlistMigrations } from './store/migrations';

export type PlaylistDeps = RuntimeDeps;

/** Composition root of the playlist service. */
export function buildPlaylist(config: PlaylistConfig, deps: PlaylistDeps = {}) {
  const rt = new ServiceRuntime(config, playlistMigrations, deps);
  rt.finishRoutes();
  return { name: 'playlist', runtime: rt, http: rt.app, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type PlaylistService = ReturnType<typeof buildPlaylist>;
