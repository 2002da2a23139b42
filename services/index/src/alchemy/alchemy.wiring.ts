import { TaskRunStore, type ServiceRuntime } from '@polyphony/platform';
import type { ArtistService } from '../artists/artist.service';
import type { IndexState } from '../core/generation';
import type { NamedSeedSource, PlaylistPort } from '../core/ports';
import type { ScopeDeps } from '../core/scope';
import { AlchemyService } from './alchemy.service';
import { RadioService, type RadioPeers } from './radio.service';
import { SavedAlchemyRepository } from './saved-alchemy.repository';
import { savedAlchemyRoutes } from './saved-alchemy.routes';
import { AnchorService } from './saved-alchemy.service';

/** What the alchemy feature is built on. */
export interface AlchemyWiringDeps {
  state: IndexState;
  scopeDeps: ScopeDeps;
  artists: ArtistService;
  playlists: PlaylistPort;
  /** Mood and anchor seeds; the anchor seed is filled in here. */
  seeds: NamedSeedSource;
  /** The registry's server list and the playlist service's radio playlists (peers.ts `radioPeers`). */
  radioPeers: RadioPeers;
}

/**
 * The alchemy feature: alchemy itself, saved anchors (also the `anchor` seed of alchemy, find_path and
 * similar_tracks, set on `d.seeds`) and radios, whose runs are a task kind on the platform task host over
 * `index.radio_runs` (lifecycle.ts starts its takeover scan and hands its leases back on stop).
 * @returns the services and the anchor/radio routes (the alchemy route itself is in similarity/features.routes.ts)
 */
export function wireAlchemy(rt: ServiceRuntime, d: AlchemyWiringDeps) {
  const alchemy = new AlchemyService(d.artists, d.playlists, d.seeds);
  const saved = new SavedAlchemyRepository(rt.ds);
  const anchors = new AnchorService(saved, alchemy);
  d.seeds.anchor = (idOrName, gen) => anchors.seed(idOrName, gen);
  const runs = new TaskRunStore(rt.ds, 'index', 'radio_runs', 'A radio run is already running');
  const radios = new RadioService(saved, anchors, alchemy, d.state, d.scopeDeps, d.radioPeers, runs, rt.bus, rt.logger.child({ component: 'RadioRuns' }));
  return { alchemy, anchors, radios, routes: savedAlchemyRoutes(d.state, d.scopeDeps, anchors, radios) };
}
