import type { EmbeddingSwitchStatus, SnapshotTrack, SnapshotTrackBytes, StoreLearnedFeaturesRequest, TrackDetail } from '@polyphony/contracts';
import { NotFoundError } from '@polyphony/platform';
import type { EmbeddingVersionStore, TrackStore } from './ports';

/** Songs as other services read and annotate them: details, the snapshot pages, learned features and vectors of other embedder versions. */
export class TrackService {
  constructor(
    private readonly tracks: TrackStore,
    private readonly versions: EmbeddingVersionStore,
  ) {}

  /** One song. @throws NotFoundError (404) for an unknown id */
  async find(itemId: string, includeEmbedding: boolean): Promise<TrackDetail> {
    const track = await this.tracks.find(itemId, includeEmbedding);
    if (!track) throw new NotFoundError(`Track ${itemId} not found`);
    return track;
  }

  /** The songs of `itemIds` that exist (unknown ids are absent). */
  findMany(itemIds: readonly string[], includeEmbedding: boolean): Promise<TrackDetail[]> {
    return this.tracks.findMany(itemIds, includeEmbedding);
  }

  /**
   * Replaces a song's learned features (MusiCNN tags, moods) and stores its vector of another embedder version when given.
   * With `keepExisting` a song that already has tags of `tagsModel` keeps them.
   * @throws NotFoundError (404) for an unknown song
   */
  async storeLearned(itemId: string, request: StoreLearnedFeaturesRequest): Promise<void> {
    const { embedding, keepExisting, ...learned } = request;
    if (!(await this.tracks.setLearned(itemId, learned, keepExisting === true))) throw new NotFoundError(`Track ${itemId} not found`);
    if (embedding && !(await this.versions.storeVector(itemId, embedding))) throw new NotFoundError(`Track ${itemId} not found`);
  }

  /** One snapshot page after the song id `after`. */
  snapshot(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrack[]; next: string | null; total?: number }> {
    return this.tracks.snapshot(after, limit);
  }

  /** The same page with vectors as bytes (the binary page). */
  snapshotBytes(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrackBytes[]; next: string | null; total?: number }> {
    return this.tracks.snapshotBytes(after, limit);
  }

  /**
   * The snapshot rows of songs by content id (POST /internal/snapshot/tracks/by-ids: the index's live library reads a
   * new song's vector, descriptors and mappings in one call), in request order; unknown ids are absent.
   */
  snapshotByIds(itemIds: readonly string[]): Promise<SnapshotTrackBytes[]> {
    return this.tracks.snapshotByIds(itemIds);
  }

  /** Where the catalogue stands in an embedder switch (switches when the target version covers the catalogue). */
  embeddingSwitch(): Promise<EmbeddingSwitchStatus> {
    return this.versions.status();
  }
}
