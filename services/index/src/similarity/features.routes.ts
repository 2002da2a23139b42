import type { Request } from 'express';
import { featureRoutes as routes, parityRoutes, type FingerprintParams } from '@polyphony/contracts';
import { AppError, ForbiddenError, NotFoundError, UpstreamUnavailableError, ValidationError, routeHandlers, sendJson, type RouteHandlers } from '@polyphony/platform';
import type { AlchemyService } from '../alchemy/alchemy.service';
import type { ArtistService } from '../artists/artist.service';
import type { BrowseService } from '../artists/browse.service';
import { FINGERPRINT_DEFAULT_N, type FingerprintService } from './fingerprint.service';
import type { IndexState } from '../core/generation';
import type { MapService } from '../maps/map.service';
import { pathEndOf } from './named-seeds';
import type { NamedSeedSource, RegistryPort } from '../core/ports';
import type { RebuildService } from '../generation/rebuild.service';
import { requestScope, type ScopeDeps } from '../core/scope';
import type { SearchService } from './search.service';
import { DEFAULT_SIMILAR_N, type QueryDefaults, type SimilarityService } from './similarity.service';
import type { SyncService } from '../sync/sync.service';
import type { HyperbolicService } from '../hyperbolic/hyperbolic.service';

/** Everything the feature routes call. */
export interface FeatureRouteDeps {
  state: IndexState;
  scopeDeps: ScopeDeps;
  similarity: SimilarityService;
  alchemy: AlchemyService;
  artists: ArtistService;
  fingerprint: FingerprintService;
  search: SearchService;
  map: MapService;
  sync: SyncService;
  browse: BrowseService;
  /** Mood and anchor seeds (semantic features); empty when not available. */
  seeds: NamedSeedSource;
  rebuild: RebuildService;
  registry: RegistryPort;
  /** The Poincaré ball (get_embedding's poincare_embedding and hyperbolic_radius). */
  hyperbolic: HyperbolicService;
  /** Defaults of parameters a request leaves out (admin settings, read through a short cache). */
  queryDefaults: () => Promise<QueryDefaults>;
}

/**
 * The public endpoints of the index service (shapes: shared/contracts/src/features.ts). Thin: parse with
 * the contract schema (unknown parameters pass), build the request scope (generation snapshot + the
 * server the gateway resolved into `req.identity.serverId`; the `server` parameter itself is never read
 * here), call the domain, answer 200 with the plugin shape. Errors map through the platform handler
 * (400 validation, 404 unknown id, 502/503 upstream).
 */
export function featureRoutes(d: FeatureRouteDeps): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(d.state.current(), req, d.scopeDeps, true);

  // The answer is written with sendJson (the bytes of res.json without its per-call work): the handler answers itself.
  r.json(routes.similarTracks, async ({ query: q }, req, res) => {
    const defaults = await d.queryDefaults();
    const options = { n: q.n ?? DEFAULT_SIMILAR_N, eliminateDuplicates: q.eliminate_duplicates ?? true, maxPerArtist: q.max_songs_per_artist ?? defaults.maxSongsPerArtist };
    const bySong = q.item_id !== undefined || q.title !== undefined;
    const seedKinds = [bySong, q.mood !== undefined, q.anchor_id !== undefined].filter(Boolean).length;
    if (seedKinds > 1) throw new ValidationError('Give one seed: item_id (or title and artist), mood (with centroid_index), or anchor_id');
    if (q.centroid_index !== undefined && q.mood === undefined) throw new ValidationError('centroid_index needs mood');
    if (q.mood !== undefined) {
      // Mood seed: songs nearest to the mood's centroid (unknown mood or centroid index -> 400, no tags -> 503).
      if (!d.seeds.mood) throw new ValidationError('Mood seeds are not available: no mood centroids in this deployment');
      const scope = (await scopeOf(req));
      // The seed source checks the mood's name (400 for another word), as for alchemy's and find_path's mood items.
      sendJson(res, 200, await d.similarity.similarToPoint(scope, await d.seeds.mood(scope.gen, q.mood, q.centroid_index ?? 0), options));
      return;
    }
    if (q.anchor_id !== undefined) {
      // Anchor seed: songs nearest to the saved centroid, its exclusions applied (unknown anchor -> 404).
      if (!d.seeds.anchor) throw new ValidationError('Anchor seeds are not available: no anchors in this deployment');
      const scope = (await scopeOf(req));
      const a = await d.seeds.anchor(q.anchor_id, scope.gen);
      const exclusions = a.exclusions.map((e) => ({ vector: e.vector, distance: e.distance ?? defaults.alchemySubtractDistance }));
      sendJson(res, 200, await d.similarity.similarToPoint(scope, a.vector, options, exclusions));
      return;
    }
    const rows = await d.similarity.similarTracks(
      (await scopeOf(req)),
      { itemId: q.item_id, title: q.title, artist: q.artist },
      options,
    );
    // The rows are TrackRowDto built by `toRow`: written without res.json's per-call work (same bytes).
    sendJson(res, 200, rows);
  });

  r.json(routes.findPath, async ({ query: q }, req) => {
    const scope = (await scopeOf(req));
    const start = await pathEndOf('start', { songId: q.start_song_id, mood: q.start_mood, anchor: q.start_anchor }, scope.gen, d.seeds);
    const end = await pathEndOf('end', { songId: q.end_song_id, mood: q.end_mood, anchor: q.end_anchor }, scope.gen, d.seeds);
    return d.similarity.findPathBetween(scope, start, end, q.max_steps ?? (await d.queryDefaults()).pathSteps);
  });

  r.json(routes.alchemy, async ({ body }, req) => {
    const defaults = await d.queryDefaults();
    return d.alchemy.run((await scopeOf(req)), body.items, {
      n: body.n ?? defaults.alchemyN,
      temperature: body.temperature ?? defaults.alchemyTemperature,
      subtractDistance: body.subtract_distance ?? defaults.alchemySubtractDistance,
      seed: body.seed,
    });
  });

  r.json(routes.similarArtists, async ({ query: q }, req) => d.artists.similarArtists((await scopeOf(req)), { artist: q.artist, artistId: q.artist_id }, q.n ?? 10, q.include_component_matches ?? false));

  // GET reads its parameters from the query, POST from the JSON body (each parsed once, by the route's schema).
  const fingerprint = async (params: FingerprintParams, req: Request) => {
    const admin = req.identity?.role === 'admin';
    // Looking up another media-server user by name with the stored (admin) credentials would let
    // any user probe which media-server accounts exist: non-admins must bring that user's own secret.
    const byName = params.jellyfin_user_identifier !== undefined && !/^[0-9a-f]{32}$/i.test(params.jellyfin_user_identifier.replace(/-/g, ''));
    if (!admin && ((byName && !params.jellyfin_token) || (params.navidrome_user && !params.navidrome_password))) {
      throw new ForbiddenError("Choosing another media-server user needs that user's own token or password, or an admin");
    }
    try {
      return await d.fingerprint.generate((await scopeOf(req)), params, params.n ?? FINGERPRINT_DEFAULT_N);
    } catch (err) {
      // The upstream message may name hosts and users of the media server: admins only.
      if (!admin && err instanceof AppError && err.httpStatus >= 500) throw new UpstreamUnavailableError('The media server could not be read', err.httpStatus);
      if (!admin && err instanceof NotFoundError) throw new NotFoundError('No such media-server user');
      throw err;
    }
  };
  r.json(routes.fingerprintGet, ({ query }, req) => fingerprint(query, req));
  r.json(routes.fingerprintPost, ({ body }, req) => fingerprint(body, req));

  r.json(routes.searchTracks, async ({ query: q }, req) => d.search.search((await scopeOf(req)), q));
  r.json(routes.externalSearch, async ({ query: q }, req) => d.search.search((await scopeOf(req)), q));

  r.json(routes.map, async ({ query: q }, req) => d.map.map((await scopeOf(req)), q));

  r.json(routes.sync, async ({ query: q }, req) => {
    const scope = (await scopeOf(req));
    const providerType = scope.serverId === undefined ? null : (await d.registry.getServer(scope.serverId)).type;
    return d.sync.sync(scope, q, providerType);
  });

  r.json(routes.getScore, async ({ query: q }, req) => d.sync.score((await scopeOf(req)), q.id));
  r.json(routes.getEmbedding, async ({ query: q }, req) => {
    const scope = (await scopeOf(req));
    const e = await d.sync.embedding(scope, q.id);
    return { ...e, ...(await d.hyperbolic.embeddingFields(scope, q.id)) };
  });
  r.json(routes.track, async ({ query: q }, req) => d.sync.track((await scopeOf(req)), q.item_id));
  r.json(routes.maxDistance, async ({ query: q }, req) => d.similarity.maxDistance((await scopeOf(req)), q.item_id));

  r.json(parityRoutes.searchArtists, async ({ query: q }, req) => d.browse.searchArtists((await scopeOf(req)), q));
  r.json(parityRoutes.searchPlaylists, async ({ query: q }, req) => d.browse.searchPlaylists((await scopeOf(req)), q));
  r.json(parityRoutes.artistTracks, async ({ query: q }, req) => d.browse.artistTracks((await scopeOf(req)), q));
  r.json(parityRoutes.artistProjections, async (_input, req) => d.browse.artistProjections((await scopeOf(req))));
  r.json(parityRoutes.buildArtistProjection, () => {
    const count = d.browse.buildProjections(d.state.current());
    return { status: 'success', message: `Artist component projection built: ${count} components`, count };
  });
  r.json(parityRoutes.mapCacheStatus, async (_input, req) => {
    const buckets = await d.map.status((await scopeOf(req)));
    return Object.keys(buckets).length ? { ok: true, buckets } : { ok: false, reason: 'empty_cache', buckets };
  });
  r.json(parityRoutes.rebuildMapCache, async (_input, req) => ({ ok: true, message: 'map cache rebuilt', buckets: await d.map.rebuild((await scopeOf(req))) }));

  // 202 (the route's status).
  r.json(routes.rebuild, async () => {
    const { taskId, coalesced } = await d.rebuild.request('requested through the API');
    return { task_id: taskId, task_type: 'index_build', status: coalesced ? 'NEW' : 'RUNNING', coalesced };
  });
  r.json(routes.status, async () => {
    const gen = d.state.current();
    const build = await d.rebuild.building();
    return {
      generation: gen.generation,
      items: gen.index.size,
      nlist: gen.index.nlist,
      dim: gen.index.dim,
      built_at: gen.builtAt ? gen.builtAt.toISOString() : null,
      building: build.building,
      task_id: build.taskId ?? null,
      // Why the last build failed (e.g. the heap limit), null after a successful one: the live generation is the previous one.
      last_build_error: d.rebuild.lastError ?? null,
      // Mapping-log position applied to the live generation's maps and when it was last at the catalogue's head.
      map_seq: gen.maps.seq,
      maps_current_at: gen.maps.currentAt ? new Date(gen.maps.currentAt).toISOString() : null,
      servers: gen.maps.summary().map((s) => ({ server_id: s.serverId, available: s.available, mappings: s.mappings })),
    };
  });
  return r;
}
