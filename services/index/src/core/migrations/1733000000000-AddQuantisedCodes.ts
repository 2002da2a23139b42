import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema, quantised codes stored with a generation (issue 19): a replica in the `int8` or `pq`
 * vector mode loads the codes the building replica computed instead of training and encoding again.
 *
 * - quantisers: one row per generation and mode: `params` = the quantiser's `toParams()` float32 values
 *   (int8: per-dimension min then step; pq: the `m` codebooks), `pq_m` its sub-space count (NULL for int8).
 * - cell_codes: the codes of one cell, `code_size` bytes per row, rows in ascending row order (the order in
 *   which both the build and a restore lay a cell out, so the blob is copied as is).
 * Both go with their build (ON DELETE CASCADE), like the cells.
 */
export class AddQuantisedCodes1733000000000 implements MigrationInterface {
  name = 'AddQuantisedCodes1733000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "index".quantisers (
      generation bigint NOT NULL REFERENCES "index".builds (generation) ON DELETE CASCADE,
      mode text NOT NULL CHECK (mode IN ('int8', 'pq')),
      pq_m integer,
      code_size integer NOT NULL,
      params bytea NOT NULL,
      PRIMARY KEY (generation, mode)
    )`);
    await q.query(`CREATE TABLE "index".cell_codes (
      generation bigint NOT NULL,
      mode text NOT NULL,
      cell_id integer NOT NULL,
      codes bytea NOT NULL,
      PRIMARY KEY (generation, mode, cell_id),
      FOREIGN KEY (generation, mode) REFERENCES "index".quantisers (generation, mode) ON DELETE CASCADE
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".cell_codes');
    await q.query('DROP TABLE "index".quantisers');
  }
}
