import type { DataSource } from 'typeorm';

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

/** `index.deltas` (migration 1734000000000-AddLiveDeltas). */
export class DeltaRepository implements DeltaStore {
  constructor(private readonly ds: DataSource) {}

  async append(generation: number, itemIds: readonly string[], vectors: Float32Array, mappings: ReadonlyArray<ReadonlyArray<[string, string]>>): Promise<number> {
    const rows: Array<{ seq: string }> = await this.ds.query(`INSERT INTO "index".deltas (generation, item_ids, vectors, mappings) VALUES ($1, $2::text[], $3, $4::jsonb) RETURNING seq`, [
      generation,
      itemIds,
      Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength),
      JSON.stringify(mappings),
    ]);
    return Number(rows[0]!.seq);
  }

  async after(generation: number, seq: number): Promise<DeltaRecord[]> {
    const rows: Array<{ seq: string; generation: string; item_ids: string[]; vectors: Buffer; mappings: Array<Array<[string, string]>> }> = await this.ds.query(
      `SELECT seq, generation, item_ids, vectors, mappings FROM "index".deltas WHERE generation = $1 AND seq > $2 ORDER BY seq`,
      [generation, seq],
    );
    return rows.map((r) => {
      // A copy: the driver's buffer may not be 4-byte aligned.
      const copy = new Uint8Array(r.vectors.byteLength);
      copy.set(r.vectors);
      return { seq: Number(r.seq), generation: Number(r.generation), itemIds: r.item_ids, vectors: new Float32Array(copy.buffer), mappings: r.mappings };
    });
  }
}
