/**
 * Feature probes answered from the catalogue's counts (shapes: @polyphony/contracts probes.ts). Each
 * answers 200 also before anything is analysed (`loaded: false`, `song_count: 0`):
 * - `GET /api/clap/stats`: text search ranks songs by their learned MusiCNN tags (issue 14), so it is
 *   loaded when at least one song has tags; `song_count` = songs with tags; `embedding_dimension` = the
 *   number of tag probabilities per song it ranks on (the 50 MSD tags; 0 when not loaded).
 * - `GET /api/lyrics/stats`: lyrics search is full-text over stored lyrics: loaded when a song has lyrics,
 *   `song_count` = songs with lyrics, `embedding_dimension` 0 (no fixed-size lyrics vector).
 * - `GET /api/sem_grove/stats`: SemGrove merges lyrics and audio similarity; it holds the songs that have
 *   both (every song has audio): `song_count` = songs with lyrics (the same set `search_tracks?index=sem_grove`
 *   keeps); `audio_dim` = the embedding size, `lyrics_dim` 0 (no fixed-size lyrics vector); weights are the
 *   reference's 0.25 audio / 0.75 lyrics.
 * - `GET /api/models`: per learned model, coverage over the catalogue and over the selected server; `recording` is
 *   the landmark fingerprint of search by recording (songs with a fingerprint of the current landmark codec
 *   version; no model file, always enabled).
 * Counts come from CoverageService (reused for PROBE_CACHE_MS, so a burst of client start-ups costs one scan).
 */
import { MSD_TAGS, probeRoutes as routes, type ModelsDto } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { CoverageService } from '../domain/coverage.service';

/** Dimension of the stored audio embedding (contract: 200-d vectors). */
export const AUDIO_DIM = 200;
/** SemGrove merge weights (reference: 0.25 audio, 0.75 lyrics). */
export const SEM_GROVE_WEIGHTS = { audio: 0.25, lyrics: 0.75 } as const;

/** Coverage of `count` songs among `total` (percentage with one decimal). */
export function coverage(count: number, total: number): { count: number; total: number; percentage: number } {
  return { count, total, percentage: total > 0 ? Math.round((1000 * count) / total) / 10 : 0 };
}

export function probeRoutes(coverageCounts: CoverageService): RouteHandlers {
  const r = routeHandlers();
  const counts = (serverId?: string) => coverageCounts.counts(serverId);

  r.json(routes.clapStats, async () => {
    const c = await counts();
    const loaded = c.tagged > 0;
    return { clap_enabled: loaded, loaded, song_count: c.tagged, embedding_dimension: loaded ? MSD_TAGS.length : 0 };
  });
  r.json(routes.lyricsStats, async () => {
    const c = await counts();
    return { lyrics_enabled: true, loaded: c.lyrics > 0, song_count: c.lyrics, embedding_dimension: 0 };
  });
  r.json(routes.semGroveStats, async () => {
    const c = await counts();
    const loaded = c.lyrics > 0;
    return { loaded, song_count: c.lyrics, audio_dim: AUDIO_DIM, lyrics_dim: 0, w_audio: SEM_GROVE_WEIGHTS.audio, w_lyrics: SEM_GROVE_WEIGHTS.lyrics };
  });
  r.json(routes.models, async (_input, req) => {
    const serverId = req.identity?.serverId;
    const [g, l] = await Promise.all([counts(), serverId === undefined ? Promise.resolve(undefined) : counts(serverId)]);
    return {
      musicnn: { enabled: g.tagged > 0, global: coverage(g.tagged, g.songs), ...(l ? { local: coverage(l.tagged, l.songs) } : {}) },
      lyrics: { enabled: g.lyrics > 0, global: coverage(g.lyrics, g.songs), ...(l ? { local: coverage(l.lyrics, l.songs) } : {}) },
      recording: { enabled: true, global: coverage(g.fingerprinted, g.songs), ...(l ? { local: coverage(l.fingerprinted, l.songs) } : {}) },
    } satisfies ModelsDto;
  });
  return r;
}
