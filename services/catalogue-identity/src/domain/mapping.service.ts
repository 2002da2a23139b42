import type { MappingChangesPage, MappingRowsPage } from '@polyphony/contracts';
import { ValidationError } from '@polyphony/platform';
import type { CatalogueSettings } from '../settings';
import type { ListedDuration } from './durations';
import type { MappingChangedPublisher } from './mapping-events';
import type { ArtistStore, BackfillResult, MappingLogStore, MappingStore, ServerDeletionResult } from './ports';

/**
 * The mapping between songs (content ids) and the files of each server, as other services read it through the
 * internal API: input resolution and output mapping of ids and artist names, availability sets, the change log and
 * the full map (index replicas), the duration back-fill of a server's listing, and forgetting a deleted server.
 */
export class MappingService {
  constructor(
    private readonly mappings: MappingStore,
    private readonly log: MappingLogStore,
    private readonly artists: ArtistStore,
    private readonly settings: Pick<CatalogueSettings, 'get'>,
    private readonly events: Pick<MappingChangedPublisher, 'now'>,
  ) {}

  /**
   * Forgets a server deleted from the registry: its mapping, Chromaprint and artist rows go (never songs; those mapped
   * nowhere else become orphans) and catalogue.mapping.changed.v1 is published for it at once. Idempotent.
   */
  async forgetServer(serverId: string): Promise<ServerDeletionResult> {
    const result = await this.mappings.deleteServer(serverId);
    await this.events.now({ serverId, reason: 'server_deleted' });
    return result;
  }

  /** Provider ids among `providerIds` that have a mapping on the server. */
  lookupMapped(serverId: string, providerIds: readonly string[]): Promise<string[]> {
    return this.mappings.lookupMapped(serverId, providerIds);
  }

  /**
   * Mapped ids whose stored file stamp differs from the listed one (`stamps` aligned with `providerIds`, null = none
   * listed): files changed in place (issue 35).
   * @throws ValidationError (400) when `stamps` is not aligned with `providerIds`.
   */
  lookupChanged(serverId: string, providerIds: readonly string[], stamps: ReadonlyArray<string | null>): Promise<string[]> {
    if (stamps.length !== providerIds.length) throw new ValidationError('stamps must have one entry per provider id');
    return this.mappings.lookupChanged(serverId, providerIds, stamps);
  }

  /** Provider ids of the server -> song ids; song ids and unknown ids pass through (same order and length). */
  resolveInput(serverId: string | undefined, ids: readonly string[]): Promise<string[]> {
    return this.mappings.resolveInput(serverId, ids);
  }

  /** Song id -> the server's provider id; songs not on the server are absent. */
  mapOutput(serverId: string, itemIds: readonly string[]): Promise<Record<string, string>> {
    return this.mappings.mapOutput(serverId, itemIds);
  }

  availabilityVersion(serverId: string): Promise<number> {
    return this.mappings.availabilityVersion(serverId);
  }

  /** The song ids available on a server, with the set's version. */
  availability(serverId: string): Promise<{ version: number; itemIds: string[] }> {
    return this.mappings.availability(serverId);
  }

  /** Songs with a file in one of the server's `libraryIds`, and the count of its songs with no recorded library (issue 34). */
  libraryAvailability(serverId: string, libraryIds: readonly string[]): Promise<{ itemIds: string[]; unknownLibrary: number }> {
    return this.mappings.libraryAvailability(serverId, libraryIds);
  }

  /** One page of every mapping row. @throws ValidationError (400) when `after` is not a cursor of this page */
  rows(after: string | undefined, limit: number): Promise<MappingRowsPage> {
    return this.log.rows(after, limit);
  }

  /** Mapping log entries after position `after`, in commit order. */
  changes(after: number, limit: number): Promise<MappingChangesPage> {
    return this.log.changes(after, limit);
  }

  /** An artist's display name or provider id on a server -> its name and provider id there. */
  resolveArtist(serverId: string, value: string): Promise<{ artistName: string; providerArtistId: string | null }> {
    return this.artists.resolve(serverId, value);
  }

  /** Artist names -> the server's provider artist ids; names not on the server are absent. */
  mapArtistNames(serverId: string, names: readonly string[]): Promise<Record<string, string>> {
    return this.artists.mapNames(serverId, names);
  }

  /** Fills missing durations from a server's listing, within the configured duration tolerance (seconds). */
  async backfillDurations(serverId: string, listing: readonly ListedDuration[]): Promise<BackfillResult> {
    const tunables = await this.settings.get();
    return this.mappings.backfillDurations(serverId, listing, tunables.identity.durationToleranceSeconds);
  }
}
