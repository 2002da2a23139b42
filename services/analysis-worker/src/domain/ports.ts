import type { ResolveIdentityRequest, ResolveIdentityResponse } from '@polyphony/contracts';
import type { MediaServerClient, ServerConnection, ServerType } from '@polyphony/media-servers';

/** A configured media server as the registry reports it to internal callers (with credentials). */
export interface ServerInfo {
  id: string;
  name: string;
  type: ServerType;
  isDefault: boolean;
  connection: ServerConnection;
}

/** What the analysis needs from the registry. */
export interface RegistryPort {
  /** Every configured server (all are active), default first. */
  listServers(): Promise<ServerInfo[]>;
  getServer(id: string): Promise<ServerInfo>;
}

/** What the analysis needs from the catalogue-identity service. */
export interface CataloguePort {
  /** Provider ids among `providerIds` that already have a mapping on the server. */
  mappedProviderIds(serverId: string, providerIds: string[]): Promise<Set<string>>;
  resolve(request: ResolveIdentityRequest): Promise<ResolveIdentityResponse>;
  storeLyrics(itemId: string, lyrics: string): Promise<void>;
}

export type MediaClientFactory = (conn: ServerConnection) => MediaServerClient;
