import type { DataSource, EntityManager } from 'typeorm';
import type { DeltaRecord, DeltaStore } from './ports';

/** `index.deltas` (migration 1734000000000-AddLiveDeltas). */
export class DeltaRepository implements DeltaStore {
  constructor(private readonly ds: DataSource) {}

  async append(generation: number, itemIds: readonly string[], vectors: Float32Array, mappings: ReadonlyArray<ReadonlyArray<[string, string]>>, mappingSeq: number): Promise<number> {
    const rows: Array<{ seq: string }> = await this.ds.query(`INSERT INTO "index".deltas (generation, item_ids, vectors, mappings, mapping_seq) VALUES ($1, $2::text[], $3, $4::jsonb, $5) RETURNING seq`, [
      generation,
      itemIds,
      Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength),
      JSON.stringify(mappings),
      mappingSeq,
    ]);
    return Number(rows[0]!.seq);
  }

  async after(generation: number, seq: number): Promise<DeltaRecord[]> {
    const rows: Array<{ seq: string; generation: string; item_ids: string[]; vectors: Buffer; mappings: Array<Array<[string, string]>>; mapping_seq: string | null }> = await this.ds.query(
      `SELECT seq, generation, item_ids, vectors, mappings, mapping_seq FROM "index".deltas WHERE generation = $1 AND seq > $2 ORDER BY seq`,
      [generation, seq],
    );
    return rows.map((r) => {
      // A copy: the driver's buffer may not be 4-byte aligned.
      const copy = new Uint8Array(r.vectors.byteLength);
      copy.set(r.vectors);
      return { seq: Number(r.seq), generation: Number(r.generation), itemIds: r.item_ids, vectors: new Float32Array(copy.buffer), mappings: r.mappings, mappingSeq: r.mapping_seq === null ? null : Number(r.mapping_seq) };
    });
  }
}

/**
 * Inside the activation transaction of `generation` (GenerationRepository.activate), before the catalogue copy loses
 * the rows the build did not see and the older generations (their batches with them) are deleted: the songs of older
 * generations' live-library batches that the new generation does not hold become ONE batch of `generation` (their
 * vectors and mappings as stored, each song once, from its latest batch; the earliest mapping-log position of those
 * batches, or none when one is unknown), and their catalogue-copy rows are marked with
 * `generation`, so they survive the activation and every replica's catch-up appends them. This is the song a batch
 * added while the build's snapshot was already past its key (issue 35): without it the activation deleted its row and
 * the new generation ignored the batch until the next rebuild. The older builds' rows are locked first (FOR UPDATE):
 * a batch being stored for them (its foreign key takes KEY SHARE) is either seen here or refused after the commit
 * (the live library keeps those songs pending and stores them for the new generation).
 * @returns the number of songs carried over
 */
export async function carryDeltas(m: EntityManager, generation: number): Promise<number> {
  await m.query(`SELECT generation FROM "index".builds WHERE generation <> $1 ORDER BY generation FOR UPDATE`, [generation]);
  const rows: Array<{ item_ids: string[] }> = await m.query(
    `INSERT INTO "index".deltas (generation, item_ids, vectors, mappings, mapping_seq)
     SELECT $1, array_agg(c.item_id ORDER BY c.seq, c.ord), string_agg(c.vec, ''::bytea ORDER BY c.seq, c.ord), jsonb_agg(c.mapping ORDER BY c.seq, c.ord),
            CASE WHEN bool_or(c.mapping_seq IS NULL) THEN NULL ELSE min(c.mapping_seq) END
       FROM (SELECT DISTINCT ON (u.item_id) d.seq, u.ord, u.item_id, d.mapping_seq,
                    substring(d.vectors FROM ((u.ord - 1) * (octet_length(d.vectors) / cardinality(d.item_ids)))::int + 1 FOR octet_length(d.vectors) / cardinality(d.item_ids)) AS vec,
                    COALESCE(d.mappings -> (u.ord::int - 1), '[]'::jsonb) AS mapping
               FROM "index".deltas d CROSS JOIN LATERAL unnest(d.item_ids) WITH ORDINALITY AS u(item_id, ord)
              WHERE d.generation < $1
                AND EXISTS (SELECT 1 FROM "index".tracks t WHERE t.item_id = u.item_id AND t.seen_build < $1)
              ORDER BY u.item_id, d.seq DESC) c
     HAVING count(*) > 0
     RETURNING item_ids`,
    [generation],
  );
  const ids = rows[0]?.item_ids ?? [];
  // Marks only go up: a row a newer build marked is not lowered to this generation.
  if (ids.length) await m.query(`UPDATE "index".tracks SET seen_build = $1 WHERE item_id = ANY($2::text[]) AND seen_build < $1`, [generation, ids]);
  return ids.length;
}
