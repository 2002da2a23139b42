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
  ItemIdParams,
  MappingRowsQuery,
  type MappingChangesPage,
  type MappingRowsPage,
  RelabelMapPage,
  RelabelMapQuery,
  ResolveIdentityRequest,
  ServerIdParams,
  StoreLearnedFeaturesRequest,
  TrackGetQuery,
  SNAPSHOT_PAGE_BINARY_TYPE,
  encodeSnapshotPage,
  z, api } from '@polyphony/contracts';
import { NotFoundError, ValidationError, asyncRoute, parseOrThrow, parsedQuery, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IdentityService } from '../domain/identity.service';
import type { EmbeddingSwitchStore } from '../store/embedding-switch.store';
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
const TrackQuery = TrackGetQuery;

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
  /** Embedder versions: alternates, switch status and the switch itself. */
  versions: EmbeddingSwitchStore;
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

  r.json(api.internal.tracksLookup, async ({ body }) => ({ tracks: await d.tracks.findMany(body.itemIds, body.includeEmbedding) }));


  r.on(api.internal.trackLearned,
    asyncRoute(async (req, res) => {
      const { itemId } = parseOrThrow(ItemParams, req.params, 'path');
      const { embedding, ...learned } = parseOrThrow(StoreLearnedFeaturesRequest, req.body, 'learned features');
      if (!(await d.tracks.setLearned(itemId, learned))) throw new NotFoundError(`Track ${itemId} not found`);
      if (embedding && !(await d.versions.storeVector(itemId, embedding))) throw new NotFoundError(`Track ${itemId} not found`);
      res.status(204).end();
    }),
  );

  r.json(api.internal.embeddingSwitch, async () => d.versions.status());

  r.on(api.internal.trackGet,
    asyncRoute(async (req, res) => {
      const { itemId } = parseOrThrow(ItemParams, req.params, 'path');
      const q = parseOrThrow(TrackQuery, req.query, 'query');
      const track = await d.tracks.find(itemId, q.embedding !== '0' && q.embedding !== 'false');
      if (!track) throw new NotFoundError(`Track ${itemId} not found`);
      res.json(track);
    }),
  );

  r.json(api.internal.mappingsLookup, async ({ body }) => ({ mapped: await d.mappings.lookupMapped(body.serverId, body.providerIds) }));

  r.json(api.internal.idsResolveInput, async ({ body }) => ({ ids: await d.mappings.resolveInput(body.serverId, body.ids) }));

  r.json(api.internal.idsMapOutput, async ({ body }) => ({ map: await d.mappings.mapOutput(body.serverId, body.itemIds) }));

  r.on(api.internal.idsRelabelMap,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(RelabelMapQuery, req.query, 'query');
      const page = await d.scheme.relabelMap(q.toVersion, q.after, q.limit);
      res.json({ toVersion: q.toVersion, ...page } satisfies RelabelMapPage);
    }),
  );

  r.json(api.internal.availabilityVersion, async ({ params: { serverId } }) => ({ serverId, version: await d.mappings.availabilityVersion(serverId) }));

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

  r.json(api.internal.mappingChanges, async ({ query: q }) => (await d.log.changes(q.after, q.limit)) satisfies MappingChangesPage);

  // Content negotiation (contracts snapshot-binary.ts): JSON unless the caller's Accept prefers the binary page.
  r.on(api.internal.snapshotTracks,
    asyncRoute(async (req, res) => {
      const q = parsedQuery(api.internal.snapshotTracks, req);
      if (req.accepts(['application/json', SNAPSHOT_PAGE_BINARY_TYPE]) === SNAPSHOT_PAGE_BINARY_TYPE) {
        const body = encodeSnapshotPage(await d.tracks.snapshotBytes(q.after, q.limit));
        res.status(200).type(SNAPSHOT_PAGE_BINARY_TYPE).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
        return;
      }
      res.json(await d.tracks.snapshot(q.after, q.limit));
    }),
  );

  r.json(api.internal.artistsResolve, async ({ query: q }) => (await d.artists.resolve(q.serverId, q.value)) satisfies ArtistResolveResponse);

  r.json(api.internal.artistsMapOutput, async ({ body }) => ({ map: await d.artists.mapNames(body.serverId, body.names) }));

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
