/**
 * Internal HTTP API of the catalogue (service to service; the gateway never routes /internal). Every
 * request carries the signed identity header (checked by the shared middleware); writes need the admin
 * role that service clients sign with. Shapes: @polyphony/contracts catalogue.ts.
 */
import express from 'express';
import { type ArtistResolveResponse, type AvailabilityResponse, type MappingChangesPage, type MappingRowsPage, type RelabelMapPage, SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE, encodeSnapshotPage, type z, api } from '@polyphony/contracts';
import { routeHandlers, sendSnapshotStream, type Logger, type RouteHandlers } from '@polyphony/platform';
import type { SnapshotChangeFeed } from '../domain/ports';
import type { IdentityService } from '../domain/identity.service';
import type { MappingService } from '../domain/mapping.service';
import type { RemovalService } from '../domain/removals.service';
import type { SchemeService } from '../domain/scheme.service';
import type { TrackService } from '../domain/track.service';
import type { CatalogueSettings } from '../settings';

/**
 * Content type of a duration back-fill larger than the shared 10 MB JSON limit (a whole-catalogue
 * listing of a big server): the same JSON document, parsed by this route with a 512 MB limit.
 */
export const LARGE_JSON_CONTENT_TYPE = 'application/vnd.polyphony.large+json';

/** Dependencies of the routes: domain services only. */
export interface InternalRouteDeps {
  identity: IdentityService;
  /** Ids, artist names, availability, the mapping log and full-map paging, duration back-fill. */
  mappings: MappingService;
  /** Song details, snapshot pages, learned features, embedder versions. */
  tracks: TrackService;
  settings: CatalogueSettings;
  /** The identity scheme (the relabel map of a scheme change). */
  scheme: Pick<SchemeService, 'relabelMap'>;
  /** The change detection's removal check. */
  removals: Pick<RemovalService, 'check'>;
  /** The change feed: songs whose snapshot rows changed since a mark (index builds read only the delta, issue 35). */
  changes: SnapshotChangeFeed;
  /** Where a snapshot stream that fails mid-way is logged (optional: tests). */
  logger?: Logger;
}

/** All /internal routes of the catalogue (inputs parsed by the route table's schemas before a handler runs). */
export function internalRoutes(d: InternalRouteDeps): RouteHandlers {
  const r = routeHandlers();

  r.json(api.internal.removalCheck, ({ params: { serverId } }) => d.removals.check(serverId));
  r.json(api.internal.identityResolve, async ({ body }) => {
    const { itemId, outcome, reanalysis, previousItemId } = await d.identity.resolve(body);
    return reanalysis ? { itemId, outcome, reanalysis, previousItemId } : { itemId, outcome };
  });

  r.json(api.internal.identityState, async () => {
    const scheme = d.identity.activeScheme;
    const tunables = await d.settings.get();
    return {
      schemeVersion: scheme?.version ?? null,
      bandLayoutId: scheme?.layout.id ?? null,
      configuredSchemeVersion: tunables.identity.schemeVersion,
      duplicateDistanceThresholdCosine: tunables.identity.duplicateDistanceThresholdCosine,
      durationToleranceSeconds: tunables.identity.durationToleranceSeconds,
      chromaprintGateEnabled: tunables.identity.chromaprintGateEnabled,
      signatureMaxHamming: tunables.identity.signatureMaxHamming,
      cleaningCatalogue: tunables.cleaningCatalogue,
    };
  });

  r.json(api.internal.tracksLookup, async ({ body }) => ({ tracks: await d.tracks.findMany(body.itemIds, body.includeEmbedding) }));
  r.json(api.internal.trackLearned, async ({ params: { itemId }, body }, _req, res) => {
    await d.tracks.storeLearned(itemId, body);
    res.status(204).end();
  });
  r.json(api.internal.embeddingSwitch, () => d.tracks.embeddingSwitch());
  r.json(api.internal.trackGet, ({ params: { itemId }, query: q }) => d.tracks.find(itemId, q.embedding !== '0' && q.embedding !== 'false'));

  r.json(api.internal.mappingsLookup, async ({ body }) => {
    const mapped = await d.mappings.lookupMapped(body.serverId, body.providerIds);
    return body.stamps === undefined ? { mapped } : { mapped, changed: await d.mappings.lookupChanged(body.serverId, body.providerIds, body.stamps) };
  });
  r.json(api.internal.idsResolveInput, async ({ body }) => ({ ids: await d.mappings.resolveInput(body.serverId, body.ids) }));
  r.json(api.internal.idsMapOutput, async ({ body }) => ({ map: await d.mappings.mapOutput(body.serverId, body.itemIds) }));
  r.json(api.internal.idsRelabelMap, async ({ query: q }) => ({ toVersion: q.toVersion, ...(await d.scheme.relabelMap(q.toVersion, q.after, q.limit)) }) satisfies RelabelMapPage);
  r.json(api.internal.availabilityVersion, async ({ params: { serverId } }) => ({ serverId, version: await d.mappings.availabilityVersion(serverId) }));
  r.json(api.internal.availability, async ({ params: { serverId } }) => {
    const a = await d.mappings.availability(serverId);
    return { serverId, version: a.version, itemIds: a.itemIds } satisfies z.infer<typeof AvailabilityResponse>;
  });
  r.json(api.internal.libraryAvailability, async ({ params: { serverId }, body }) => ({ serverId, ...(await d.mappings.libraryAvailability(serverId, body.libraryIds)) }));
  r.json(api.internal.mappingRows, async ({ query: q }) => (await d.mappings.rows(q.after, q.limit)) satisfies MappingRowsPage);
  r.json(api.internal.mappingChanges, async ({ query: q }) => (await d.mappings.changes(q.after, q.limit)) satisfies MappingChangesPage);

  // Content negotiation (contracts snapshot-binary.ts): JSON unless the caller's Accept prefers the binary page.
  // The snapshot stream (SNAPSHOT_STREAM_TYPE): every page from `after` on in one response, the next page read while
  // the current one is written (platform sendSnapshotStream); `limit` is the page size.
  r.json(api.internal.snapshotTracks, async ({ query: q }, req, res) => {
    const wanted = req.accepts(['application/json', SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE]);
    if (wanted === SNAPSHOT_STREAM_TYPE) {
      await sendSnapshotStream(res, (after) => d.tracks.snapshotBytes(after, q.limit), q.after, d.logger);
      return;
    }
    if (wanted === SNAPSHOT_PAGE_BINARY_TYPE) {
      const body = encodeSnapshotPage(await d.tracks.snapshotBytes(q.after, q.limit));
      res.status(200).type(SNAPSHOT_PAGE_BINARY_TYPE).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      return;
    }
    res.json(await d.tracks.snapshot(q.after, q.limit));
  });

  r.json(api.internal.snapshotChanges, ({ query: q }) => d.changes.changesSince({ limit: q.limit, ...(q.since !== undefined ? { since: q.since } : {}), ...(q.catalogue !== undefined ? { catalogue: q.catalogue } : {}) }));
  r.json(api.internal.snapshotTracksByIds, async ({ body }) => ({
    tracks: (await d.tracks.snapshotByIds(body.itemIds)).map(({ vector, ...rest }) => ({ ...rest, embedding: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64') })),
  }));
  r.json(api.internal.artistsResolve, async ({ query: q }) => (await d.mappings.resolveArtist(q.serverId, q.value)) satisfies ArtistResolveResponse);
  r.json(api.internal.artistsMapOutput, async ({ body }) => ({ map: await d.mappings.mapArtistNames(body.serverId, body.names) }));
  // A whole-catalogue listing may come as LARGE_JSON_CONTENT_TYPE, parsed here with a 512 MB limit.
  r.json(api.internal.durationsBackfill, ({ body }) => d.mappings.backfillDurations(body.serverId, body.tracks), { before: [express.json({ type: LARGE_JSON_CONTENT_TYPE, limit: '512mb' })] });

  return r;
}
