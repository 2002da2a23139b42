import { api, z, type SnapshotTrack } from '@polyphony/contracts';
import { AppError, type PeerClient } from '@polyphony/platform';
import type { CataloguePort, RegistryPort, ServerInfo, TrackDetails, TrackTitle } from './domain/ports';

/** Ids per resolve-input / map-output call (the catalogue accepts 50 000; smaller calls keep bodies small). */
export const ID_BATCH = 5000;
/** Ids per track lookup call (the catalogue's maximum). */
export const LOOKUP_BATCH = 5000;

/** Only the fields read from a track lookup, so additions on the catalogue side never break this caller. */
const TitleLookup = z.object({ tracks: z.array(z.object({ itemId: z.string(), title: z.string(), artist: z.string() }).passthrough()) });
/** The fields an export reads of a track lookup (mappings' file paths per server). */
const DetailLookup = z.object({
  tracks: z.array(
    z
      .object({
        itemId: z.string(),
        title: z.string(),
        artist: z.string(),
        album: z.string().nullish(),
        durationSeconds: z.number().nullish(),
        mappings: z.array(z.object({ serverId: z.string(), filePath: z.string().nullish() }).passthrough()).default([]),
      })
      .passthrough(),
  ),
});

/** Registry adapter over its internal HTTP API (GET /internal/servers, GET /internal/servers/:id), typed from the route table. */
export function registryPort(registry: PeerClient): RegistryPort {
  return {
    async listServers(): Promise<ServerInfo[]> {
      return (await registry.call(api.internal.serversList)).servers;
    },
    async getServer(id: string): Promise<ServerInfo | undefined> {
      try {
        return await registry.call(api.internal.serverGet, { params: { id } });
      } catch (err) {
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
    async getServerForUser(id: string, userId: string | undefined) {
      try {
        return await registry.call(api.accountsInternal.serverForUser, { params: { id }, query: { userId } });
      } catch (err) {
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
  };
}

/** Catalogue-identity adapter over its internal HTTP API (ids, snapshot, track lookup), batching long id lists. */
export function cataloguePort(catalogue: PeerClient): CataloguePort {
  return {
    async resolveInput(serverId, ids) {
      const out: string[] = [];
      for (let i = 0; i < ids.length; i += ID_BATCH) {
        const batch = ids.slice(i, i + ID_BATCH);
        const res = await catalogue.call(api.internal.idsResolveInput, { body: { serverId, ids: batch } });
        if (res.ids.length !== batch.length) throw new AppError('upstream_error', 'Catalogue resolve-input answered a list of another length', 502);
        out.push(...res.ids);
      }
      return out;
    },
    async mapOutput(serverId, itemIds) {
      const unique = [...new Set(itemIds)];
      const out = new Map<string, string>();
      for (let i = 0; i < unique.length; i += ID_BATCH) {
        const res = await catalogue.call(api.internal.idsMapOutput, { body: { serverId, itemIds: unique.slice(i, i + ID_BATCH) } });
        for (const [k, v] of Object.entries(res.map)) out.set(k, v);
      }
      return out;
    },
    async *snapshotPages(pageSize = 1000): AsyncIterable<SnapshotTrack[]> {
      let after: string | undefined;
      for (;;) {
        const page = await catalogue.call(api.internal.snapshotTracks, { query: { after, limit: pageSize } });
        if (page.tracks.length) yield page.tracks;
        if (!page.next || page.tracks.length === 0) return;
        after = page.next;
      }
    },
    async lookupTitles(itemIds) {
      const unique = [...new Set(itemIds)];
      const out = new Map<string, TrackTitle>();
      for (let i = 0; i < unique.length; i += LOOKUP_BATCH) {
        const res = await catalogue.callAs(api.internal.tracksLookup, TitleLookup, { body: { itemIds: unique.slice(i, i + LOOKUP_BATCH) } });
        for (const t of res.tracks) out.set(t.itemId, { title: t.title, author: t.artist });
      }
      return out;
    },
    async lookupDetails(itemIds) {
      const unique = [...new Set(itemIds)];
      const out = new Map<string, TrackDetails>();
      for (let i = 0; i < unique.length; i += LOOKUP_BATCH) {
        const res = await catalogue.callAs(api.internal.tracksLookup, DetailLookup, { body: { itemIds: unique.slice(i, i + LOOKUP_BATCH) } });
        for (const t of res.tracks) {
          const paths = new Map<string, string>();
          for (const m of t.mappings) if (m.filePath && !paths.has(m.serverId)) paths.set(m.serverId, m.filePath);
          out.set(t.itemId, { title: t.title, artist: t.artist, album: t.album ?? null, durationSeconds: t.durationSeconds ?? null, paths });
        }
      }
      return out;
    },
  };
}
