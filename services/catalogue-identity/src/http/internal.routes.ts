/**
 * Internal HTTP API of the catalogue (service to service; the gateway never routes /internal). Every
 * request carries the signed identity header (checked by the shared middleware); writes need the admin
 * role that service clients sign with. Shapes: @polyphony/contracts catalogue.ts.
 */
import express from 'express';
import {
  ArtistResolveResponse,
  AvailabilityResponse,
  DurationBackfillRequest,
  ArtistResolveQuery,
  ItemIdParams,
  MapOutputRequest,
  MappingChangesQuery,
  MappingRowsQuery,
  type MappingChangesPage,
  type MappingRowsPage,
  MappingLookupRequest,
  RelabelMapPage,
  RelabelMapQuery,
  ResolveIdentityRequest,
  ResolveInputRequest,
  ServerIdParams,
  SnapshotQuery,
  StoreLearnedFeaturesRequest,
  TrackGetQuery,
  TrackLookupRequest,
  z, api } from '@polyphony/contracts';
import { NotFoundError, ValidationError, asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IdentityService } from '../domain/identity.service';
import type { MappingChangedPublisher } from '../domain/mapping-events';
import type { CatalogueSettings } from '../settings';
import type { ArtistRepository } from '../store/artist.repository';
import { decodeCursor, type MappingLogRepository } from '../store/mapping-log.repository';
import type { MappingRepository } from '../store/mapping.repository';
import type { SchemeService } from '../domain/scheme.service';
import type { TrackRepository } from '../store/track.repository';

/**
 * Content type of a duration back-fill larger than the shared 10 MB JSON limit (a whole-catalogue
 * listing of a big server): the same JSON document, parsed by this route with a 512 MB limit.
 */
export const LARGE_JSON_CONTENT_TYPE = 'application/vnd.polyphony.large+json';

// Path and query schemas are the route table's (shared/contracts/src/internal.ts); the handlers parse
// with them again for the typed, defaulted values.
const ItemParams = ItemIdParams;
const ServerParams = ServerIdParams;
const ArtistQuery = ArtistResolveQuery;
const TrackQuery = TrackGetQuery;
const ArtistMapRequest = z.object({ serverId: z.string().min(1).max(200), names: z.array(z.string().max(1000)).max(50_000) });

/** Dependencies of the routes. */
export interface InternalRouteDeps {
  identity: IdentityService;
  mappings: MappingRepository;
  /** The mapping change log and full-map paging (index replicas). */
  log: MappingLogRepository;
  tracks: TrackRepository;
  artists: ArtistRepository;
  settings: CatalogueSettings;
  events: MappingChangedPublisher;
  /** The identity scheme (the relabel map of a scheme change). */
  scheme: Pick<SchemeService, 'relabelMap'>;
}

/** All /internal routes of the catalogue. */
export function internalRoutes(d: InternalRouteDeps): RouteHandlers {
  const r = routeHandlers();

  r.on(api.internal.identityResolve,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ResolveIdentityRequest, req.body, 'identity request');
      const { itemId, outcome } = await d.identity.resolve(body);
      res.json({ itemId, outcome });
    }),
  );

  r.on(api.internal.identityState,
    asyncRoute(async (_req, res) => {
      const scheme = d.identity.activeScheme;
      const tunables = await d.settings.get();
      res.json({
        schemeVersion: scheme?.version ?? null,
        bandLayoutId: scheme?.layout.id ?? null,
        configuredSchemeVersion: tunables.identity.schemeVersion,
        duplicateDistanceThresholdCosine: tunables.identity.duplicateDistanceThresholdCosine,
        durationToleranceSeconds: tunables.identity.durationToleranceSeconds,
        chromaprintGateEnabled: tunables.identity.chromaprintGateEnabled,
        signatureMaxHamming: tunables.identity.signatureMaxHamming,
        cleaningCatalogue: tunables.cleaningCatalogue,
      });
    }),
  );

  r.on(api.internal.tracksLookup,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(TrackLookupRequest, req.body, 'track lookup');
      res.json({ tracks: await d.tracks.findMany(body.itemIds, body.includeEmbedding) });
    }),
  );


  r.on(api.internal.trackLearned,
    asyncRoute(async (req, res) => {
      const { itemId } = parseOrThrow(ItemParams, req.params, 'path');
      const body = parseOrThrow(StoreLearnedFeaturesRequest, req.body, 'learned features');
      if (!(await d.tracks.setLearned(itemId, body))) throw new NotFoundError(`Track ${itemId} not found`);
      res.status(204).end();
    }),
  );

  r.on(api.internal.trackGet,
    asyncRoute(async (req, res) => {
      const { itemId } = parseOrThrow(ItemParams, req.params, 'path');
      const q = parseOrThrow(TrackQuery, req.query, 'query');
      const track = await d.tracks.find(itemId, q.embedding !== '0' && q.embedding !== 'false');
      if (!track) throw new NotFoundError(`Track ${itemId} not found`);
      res.json(track);
    }),
  );

  r.on(api.internal.mappingsLookup,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(MappingLookupRequest, req.body, 'mapping lookup');
      res.json({ mapped: await d.mappings.lookupMapped(body.serverId, body.providerIds) });
    }),
  );

  r.on(api.internal.idsResolveInput,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ResolveInputRequest, req.body, 'id list');
      res.json({ ids: await d.mappings.resolveInput(body.serverId, body.ids) });
    }),
  );

  r.on(api.internal.idsMapOutput,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(MapOutputRequest, req.body, 'id list');
      res.json({ map: await d.mappings.mapOutput(body.serverId, body.itemIds) });
    }),
  );

  r.on(api.internal.idsRelabelMap,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(RelabelMapQuery, req.query, 'query');
      const page = await d.scheme.relabelMap(q.toVersion, q.after, q.limit);
      res.json({ toVersion: q.toVersion, ...page } satisfies RelabelMapPage);
    }),
  );

  r.on(api.internal.availabilityVersion,
    asyncRoute(async (req, res) => {
      const { serverId } = parseOrThrow(ServerParams, req.params, 'path');
      res.json({ serverId, version: await d.mappings.availabilityVersion(serverId) });
    }),
  );

  r.on(api.internal.availability,
    asyncRoute(async (req, res) => {
      const { serverId } = parseOrThrow(ServerParams, req.params, 'path');
      const a = await d.mappings.availability(serverId);
      res.json({ serverId, version: a.version, itemIds: a.itemIds } satisfies z.infer<typeof AvailabilityResponse>);
    }),
  );

  r.on(api.internal.mappingRows,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(MappingRowsQuery, req.query, 'query');
      if (q.after !== undefined && decodeCursor(q.after) === undefined) throw new ValidationError('after is not a cursor of this endpoint');
      res.json((await d.log.rows(q.after, q.limit)) satisfies MappingRowsPage);
    }),
  );

  r.on(api.internal.mappingChanges,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(MappingChangesQuery, req.query, 'query');
      res.json((await d.log.changes(q.after, q.limit)) satisfies MappingChangesPage);
    }),
  );

  r.on(api.internal.snapshotTracks,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(SnapshotQuery, req.query, 'query');
      res.json(await d.tracks.snapshot(q.after, q.limit));
    }),
  );

  r.on(api.internal.artistsResolve,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(ArtistQuery, req.query, 'query');
      res.json((await d.artists.resolve(q.serverId, q.value)) satisfies ArtistResolveResponse);
    }),
  );

  r.on(api.internal.artistsMapOutput,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(ArtistMapRequest, req.body, 'artist names');
      res.json({ map: await d.artists.mapNames(body.serverId, body.names) });
    }),
  );

  r.on(api.internal.durationsBackfill,
    express.json({ type: LARGE_JSON_CONTENT_TYPE, limit: '512mb' }),
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(DurationBackfillRequest, req.body, 'duration listing');
      const tunables = await d.settings.get();
      const result = await d.mappings.backfillDurations(body.serverId, body.tracks, tunables.identity.durationToleranceSeconds);
      res.json(result);
    }),
  );

  return r;
}
