import type { EmbeddingSwitchStatus, IndexLive, StoreLearnedFeaturesRequest, LyricsPendingPage, PutLyricsRequest, ResolveIdentityRequest, ResolveIdentityResponse } from '@polyphony/contracts';
import type { MediaServerClient, ServerConnection } from '@polyphony/media-servers';

/** A configured media server with its connection (the one schema: ServerInfoSchema in @polyphony/contracts). */
import type { ServerInfo } from '@polyphony/contracts';
export type { ServerInfo };

/** What the analysis needs from the registry. */
export interface RegistryPort {
  /** Every configured server (all are active), default first. */
  listServers(): Promise<ServerInfo[]>;
  getServer(id: string): Promise<ServerInfo>;
}

/** What this process analyses with: the learned model's id (tags_model) and the embedder version it stores. */
export interface LearnedTarget {
  model: string;
  embedderVersion: string;
}

/** What the analysis needs from the catalogue-identity service. */
export interface CataloguePort {
  /** Provider ids among `providerIds` that already have a mapping on the server. */
  mappedProviderIds(serverId: string, providerIds: string[]): Promise<Set<string>>;
  resolve(request: ResolveIdentityRequest): Promise<ResolveIdentityResponse>;
  /**
   * Of these mapped provider ids of a server, those whose song has no learned features from `want.model`
   * (tagsModel differs or is null) or no vector of `want.embedderVersion` (an embedder switch), one provider id
   * per song: provider id -> song id.
   */
  songsNeedingTags(serverId: string, providerIds: string[], want: LearnedTarget): Promise<Map<string, string>>;
  /** Replaces a song's learned features, and adds its vector of another embedder version when given (PUT /internal/tracks/:itemId/learned). */
  storeLearned(itemId: string, learned: StoreLearnedFeaturesRequest): Promise<void>;
  /** Where the catalogue stands in an embedder switch; the call switches when the target version covers the catalogue (GET /internal/embedding/switch). */
  embeddingSwitch(): Promise<EmbeddingSwitchStatus>;
  /** Stores the outcome of a lyrics lookup (PUT /internal/tracks/:itemId/lyrics). */
  storeLyrics(itemId: string, outcome: PutLyricsRequest): Promise<void>;
  /** Songs without a lyrics lookup yet (GET /internal/lyrics/pending), for the backfill. */
  pendingLyrics(after: string | undefined, limit: number): Promise<LyricsPendingPage>;
}

export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;

/** What the analysis needs from the index service: the generation every replica serves (GET /internal/index/live). */
export interface IndexPort {
  /** The answering replica's generation plus every replica's heartbeat report (`IndexLive`). */
  live(): Promise<IndexLive>;
}
