/** The live library's store port (store: delta.repository.ts). */

/** One stored delta batch (`index.deltas`). */
export interface DeltaRecord {
  seq: number;
  generation: number;
  itemIds: string[];
  /** itemIds.length x dim float32 values, row order. */
  vectors: Float32Array;
  /** Per song its [serverId, providerId] pairs. */
  mappings: Array<Array<[string, string]>>;
  /**
   * The mapping-log position read before `mappings` were read (null: unknown, a batch stored before it was kept):
   * applying the batch replays the log after it over these mappings (`applyDelta`).
   */
  mappingSeq: number | null;
}

/** The live library's store port (PostgreSQL: DeltaRepository). */
export interface DeltaStore {
  /** Stores a batch for `generation` (`mappingSeq`: see DeltaRecord); @returns its sequence number (increasing). */
  append(generation: number, itemIds: readonly string[], vectors: Float32Array, mappings: ReadonlyArray<ReadonlyArray<[string, string]>>, mappingSeq: number): Promise<number>;
  /** The batches of `generation` after `seq`, in order. */
  after(generation: number, seq: number): Promise<DeltaRecord[]>;
}
