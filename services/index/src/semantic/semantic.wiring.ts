import type { ServiceRuntime } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import type { NamedSeedSource } from '../core/ports';
import type { ScopeDeps } from '../core/scope';
import { SemanticRepository } from './semantic.repository';
import { semanticRoutes } from './semantic.routes';
import { SemanticService, type LyricsPort } from './semantic.service';
import type { SemanticStorage } from './semantic-table';

/**
 * The semantic feature: text search, moods (also the `mood` seed of find_path, alchemy and similar_tracks, set on
 * `seeds`: 503 without learned tags) and SemGrove (lyrics similarity from the catalogue through `lyrics`).
 * Its per-generation table lives on local disk beyond `INDEX_TABLE_RESIDENT_MIB` (`storage`, generation/vector-storage.ts `tableStorageOf`).
 */
export function wireSemantic(rt: ServiceRuntime, state: IndexState, scopeDeps: ScopeDeps, seeds: NamedSeedSource, lyrics: LyricsPort, storage: SemanticStorage) {
  const semantic = new SemanticService(state, new SemanticRepository(rt.ds), lyrics, rt.logger.child({ component: 'SemanticService' }), storage);
  seeds.mood = (gen, mood, centroidIndex) => semantic.moodSeed(gen, mood, centroidIndex);
  return { semantic, routes: semanticRoutes(state, scopeDeps, semantic) };
}
