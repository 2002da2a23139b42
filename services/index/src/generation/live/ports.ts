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
}

/** The live library's store port (PostgreSQL: DeltaRepository). */
export interface DeltaStore {
  /** Stores a batch for `generation`; @returns its sequence number (increasing). */
  append(generation: number, itemIds: readonly string[], vectors: Float32Array, mappings: ReadonlyArray<ReadonlyArray<[string, string]>>): Promise<number>;
  /** The batches of `generation` after `seq`, in order. */
  after(generation: number, seq: number): Promise<DeltaRecord[]>;
}
