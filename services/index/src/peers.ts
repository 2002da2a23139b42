import { api, SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE, z } from '@polyphony/contracts';
import { AppError, type PeerClient } from '@polyphony/platform';
import type { AlbumPeers } from './album/album.service';
import type { RadioPeers } from './alchemy/radio.service';
import type { AiSettingsSource } from './chat/instant-playlist.service';
import type { CataloguePort, PlaylistPort, RegistryPort } from './core/ports';
import type { LibraryScopeSource } from './core/library-scope';
import type { RelabelMapSource } from './generation/repoint.service';
import { parseMappingChanges, parseMappingRows, parseSnapshotAnswer, readSnapshotStream } from './maps/wire';
import type { LyricsPort } from './semantic/semantic.service';
import type { FingerprintSource } from './recording/recording-index.service';

/**
 * The index's adapters over its peers' internal HTTP APIs, typed from the contracts route table (answers
 * parsed with each route's response schema unless noted). Errors are the peer client's (`AppError`:
 * 502/503/504 for an unreachable or failing peer); nothing here retries beyond the peer client.
 */

/** Leaves a peer's answer unparsed for a caller that checks it itself (the mapping pages: maps/wire.ts). */
const UNPARSED = z.unknown();

/** Catalogue-identity: snapshot pages, provider <-> canonical mapping log, artist resolution. */
export function cataloguePort(catalogue: PeerClient): CataloguePort {
  return {
    async snapshotPage(after, limit) {
      // The binary page (raw float32 vectors) when the catalogue serves it, JSON otherwise (an older catalogue).
      const answer = await catalogue.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE, { query: { after: after ?? undefined, limit } });
      return parseSnapshotAnswer(answer.contentType, answer.body);
    },
    async snapshotStream(after, limit) {
      // Asks for the stream, then the binary page, then JSON (an older catalogue answers the first it knows).
      const answer = await catalogue.callStream(api.internal.snapshotTracks, [SNAPSHOT_STREAM_TYPE, SNAPSHOT_PAGE_BINARY_TYPE], { query: { after: after ?? undefined, limit } });
      if (answer.contentType === SNAPSHOT_STREAM_TYPE) return { pages: readSnapshotStream(answer.chunks), cancel: answer.cancel };
      const parts: Uint8Array[] = [];
      for await (const c of answer.chunks) parts.push(c);
      return { page: parseSnapshotAnswer(answer.contentType, Buffer.concat(parts)) };
    },
    async snapshotChanges(since, limit) {
      try {
        return await catalogue.call(api.internal.snapshotChanges, { query: { ...(since ? { since: since.mark, catalogue: since.catalogue } : {}), limit } });
      } catch (err) {
        // A catalogue older than the change feed: every build reads the full snapshot.
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
    async tracksByIds(itemIds) {
      const { tracks } = await catalogue.call(api.internal.snapshotTracksByIds, { body: { itemIds: [...itemIds] } });
      return tracks.map(({ embedding, ...t }) => ({ ...t, vector: Buffer.from(embedding, 'base64') }));
    },
    async mappingRows(after) {
      // Up to 20 000 rows a page: checked by the hand-written loops of maps/wire.ts, not by a zod parse per row.
      return parseMappingRows(await catalogue.callAs(api.internal.mappingRows, UNPARSED, { query: { after: after ?? undefined } }));
    },
    async mappingChanges(after) {
      return parseMappingChanges(await catalogue.callAs(api.internal.mappingChanges, UNPARSED, { query: { after } }));
    },
    async resolveArtist(serverId, value) {
      return catalogue.call(api.internal.artistsResolve, { query: { serverId, value } });
    },
    async mapArtists(serverId, names) {
      return (await catalogue.call(api.internal.artistsMapOutput, { body: { serverId, names } })).map;
    },
  };
}

/** Catalogue-identity: relabel-map pages (GET /internal/ids/relabel-map, 5000 rows a page). */
export function relabelMapSource(catalogue: PeerClient): RelabelMapSource {
  return async (toVersion, after) => catalogue.call(api.internal.idsRelabelMap, { query: { toVersion, after: after ?? undefined, limit: 5000 } });
}

/** Catalogue-identity: lyrics similarity of SemGrove (POST /internal/lyrics/similar). */
export function lyricsPort(catalogue: PeerClient): LyricsPort {
  return {
    async similar(itemId, serverId, limit) {
      return catalogue.call(api.internal.lyricsSimilar, { body: { itemId, serverId, limit } });
    },
  };
}

/** Catalogue: stored recording fingerprints (GET /internal/fingerprints, GET /internal/tracks/:itemId/fingerprint). */
export function fingerprintSource(catalogue: PeerClient): FingerprintSource {
  return {
    fingerprintPage: (after, limit) => catalogue.call(api.recordingInternal.fingerprintsPage, { query: { after: after ?? undefined, limit } }),
    async fingerprint(itemId) {
      try {
        return await catalogue.call(api.recordingInternal.trackFingerprintGet, { params: { itemId } });
      } catch (err) {
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
  };
}

/**
 * Per-user library limits (issue 34): the registry's `GET /internal/servers/:id/library-scope` (its 502 when the media
 * server does not answer passes through) and the catalogue's `POST /internal/availability/:serverId/libraries`.
 */
export function libraryScopeSource(registry: PeerClient, catalogue: PeerClient): LibraryScopeSource {
  return {
    libraryScope: (serverId, userId) => registry.call(api.accountsInternal.libraryScope, { params: { id: serverId }, query: { userId } }),
    async libraryItems(serverId, libraryIds) {
      const r = await catalogue.call(api.internal.libraryAvailability, { params: { serverId }, body: { libraryIds: [...libraryIds] } });
      return { itemIds: r.itemIds, unknownLibrary: r.unknownLibrary };
    },
  };
}

/** Registry: one server's description (GET /internal/servers/:id). */
export function registryPort(registry: PeerClient): RegistryPort {
  return {
    getServer: (id) => registry.call(api.internal.serverGet, { params: { id } }),
  };
}

/** Registry: the AI provider settings of the chat (GET /internal/ai-settings). */
export function aiSettingsSource(registry: PeerClient): AiSettingsSource {
  return async () => registry.call(api.internal.aiSettings);
}

/** Playlist service: a named playlist's tracks (GET /internal/playlists/tracks); undefined when it answers 404. */
export function playlistPort(playlist: PeerClient): PlaylistPort {
  return {
    async playlistTracks(serverId, name, viewer) {
      try {
        return await playlist.call(api.internal.playlistTracks, { query: { serverId, playlist: name, userId: viewer } });
      } catch (err) {
        if (err instanceof AppError && err.httpStatus === 404) return undefined;
        throw err;
      }
    },
  };
}

/** What radio runs call: the registry's server list and the playlist service's radio playlist replacement. */
export function radioPeers(registry: PeerClient, playlist: PeerClient): RadioPeers {
  return {
    async listServers() {
      return (await registry.call(api.internal.serversList)).servers.map((s) => ({ id: s.id, name: s.name }));
    },
    async replaceRadio(serverId, name, ids, runId, userId) {
      return playlist.call(api.internal.playlistRadio, { body: { serverId, name, ids, runId, ...(userId ? { userId } : {}) } });
    },
  };
}

/** What Album of the Week calls: the registry's server list and the playlist service's fixed-name playlist (kind album_of_the_week). */
export function albumPeers(registry: PeerClient, playlist: PeerClient): AlbumPeers {
  return {
    async listServers() {
      return (await registry.call(api.internal.serversList)).servers.map((s) => ({ id: s.id, name: s.name }));
    },
    async replaceFixed(serverId, name, ids) {
      return playlist.call(api.internal.playlistRadio, { body: { serverId, name, ids, kind: 'album_of_the_week' } });
    },
  };
}

/**
 * Analysis worker: whether a full analysis run is live (GET /internal/analysis/run). The live library asks before it
 * requests the first build of an empty index (a live run's end-of-run rebuild covers those songs).
 */
export function analysisRunLive(analysis: PeerClient): () => Promise<boolean> {
  return async () => (await analysis.call(api.internal.analysisRunLive)).live;
}
