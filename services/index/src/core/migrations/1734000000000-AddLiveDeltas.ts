import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the live library's delta batches (issue 35, docs/architecture.md "Live library (incremental index)"):
 * songs appended to a live generation without a rebuild, in order (`seq`), so every replica, including one that starts
 * later or missed the event, applies the same rows in the same order. Deleted with their generation (cascade).
 */
export class AddLiveDeltas1734000000000 implements MigrationInterface {
  name = 'AddLiveDeltas1734000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "index".deltas (
        seq bigserial PRIMARY KEY,
        generation bigint NOT NULL REFERENCES "index".builds (generation) ON DELETE CASCADE,
        item_ids text[] NOT NULL,
        vectors bytea NOT NULL,
        mappings jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX deltas_generation_seq ON "index".deltas (generation, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".deltas');
  }
}
