import { MapOutputResponse, ResolveInputResponse, SnapshotPage, z, type SnapshotTrack } from '@polyphony/contracts';
import { AppError, type ServiceClient } from '@polyphony/platform';
import type { CataloguePort, RegistryPort, ServerInfo, TrackTitle } from './domain/ports';

/** Ids per resolve-input / map-output call (the catalogue accepts 50 000; smaller calls keep bodies small). */
export const ID_BATCH = 5000;
/** Ids per track lookup call (the catalogue's maximum). */
export const LOOKUP_BATCH = 5000;

const ServerInfoSchema = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['jellyfin', 'emby', 'navidrome', 'lyrion', 'plex']),
  isDefault: z.boolean(),
  connection: z.object({
    type: z.enum(['jellyfin', 'emby', 'navidrome', 'lyrion', 'plex']),
    creds: z.record(z.string().optional()),
    musicLibraries: z.array(z.string()).optional(),
  }),
});
const ServerListSchema = z.object({ servers: z.array(ServerInfoSchema) });
/** Only the fields read from a track lookup, so additions on the catalogue side never break this caller. */
const TitleLookupSchema = z.object({ tracks: z.array(z.object({ itemId: z.string(), title: z.string(), artist: z.string() }).passthrough()) });

/** Registry adapter over its internal HTTP API (GET /internal/servers, GET /internal/servers/:id). */
export function registryPort(client: ServiceClient): RegistryPort {
  return {
    async listServers(): Promise<ServerInfo[]> {
      return ServerListSchema.parse(await client.get('/internal/servers')).servers;
    },
    async getServer(id: string): Promise<ServerInfo | undefined> {
      try {
        return ServerInfoSchema.parse(await client.get(`/internal/servers/${encodeURIComponent(id)}`));
      } catch (err) {
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
  };
}

/** Catalogue-identity adapter over its internal HTTP API (ids, snapshot, track lookup), batching long id lists. */
export function cataloguePort(client: ServiceClient): CataloguePort {
  return {
    async resolveInput(serverId, ids) {
      const out: string[] = [];
      for (let i = 0; i < ids.length; i += ID_BATCH) {
        const batch = ids.slice(i, i + ID_BATCH);
        const res = ResolveInputResponse.parse(await client.post('/internal/ids/resolve-input', { serverId, ids: batch }));
        if (res.ids.length !== batch.length) throw new AppError('upstream_error', 'Catalogue resolve-input answered a list of another length', 502);
        out.push(...res.ids);
      }
      return out;
    },
    async mapOutput(serverId, itemIds) {
      const unique = [...new Set(itemIds)];
      const out = new Map<string, string>();
      for (let i = 0; i < unique.length; i += ID_BATCH) {
        const res = MapOutputResponse.parse(await client.post('/internal/ids/map-output', { serverId, itemIds: unique.slice(i, i + ID_BATCH) }));
        for (const [k, v] of Object.entries(res.map)) out.set(k, v);
      }
      return out;
    },
    async *snapshotPages(pageSize = 1000): AsyncIterable<SnapshotTrack[]> {
      let after: string | undefined;
      for (;;) {
        const page = SnapshotPage.parse(await client.get('/internal/snapshot/tracks', { after, limit: pageSize }));
        if (page.tracks.length) yield page.tracks;
        if (!page.next || page.tracks.length === 0) return;
        after = page.next;
      }
    },
    async lookupTitles(itemIds) {
      const unique = [...new Set(itemIds)];
      const out = new Map<string, TrackTitle>();
      for (let i = 0; i < unique.length; i += LOOKUP_BATCH) {
        const res = TitleLookupSchema.parse(await client.post('/internal/tracks/lookup', { itemIds: unique.slice(i, i + LOOKUP_BATCH) }));
        for (const t of res.tracks) out.set(t.itemId, { title: t.title, author: t.artist });
      }
      return out;
    },
  };
}
