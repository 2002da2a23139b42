import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the service's own copy of the catalogue (vectors + display metadata + search text),
 * IVF builds (one row per generation; exactly one `live`), centroids, cells written as they complete,
 * the 2-D map projection, artist mixture profiles and provider artist links per generation.
 *
 * Search uses a pg_trgm GIN index when the extension can be created (it is a trusted extension since
 * PostgreSQL 13, so the service role only needs CREATE on the database). Where it cannot, the migration
 * goes on without it and search falls back to a sequential LIKE scan.
 */
export class CreateIndexTables1732100000001 implements MigrationInterface {
  name = 'CreateIndexTables1732100000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "index".tracks (
        item_id text PRIMARY KEY,
        vector bytea NOT NULL,
        embedder_version text NOT NULL,
        title text NOT NULL,
        artist text NOT NULL,
        album text,
        album_artist text,
        year integer,
        rating real,
        duration double precision,
        tempo real,
        key text,
        scale text,
        energy real,
        title_n text NOT NULL,
        artist_n text NOT NULL,
        album_n text NOT NULL,
        search_text text NOT NULL,
        fp text NOT NULL,
        seen_build bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX tracks_artist_title ON "index".tracks (artist_n, title_n)`);
    // Serves the build's keyset scan: rows of one build in canonical-id byte order.
    await q.query(`CREATE INDEX tracks_seen_build ON "index".tracks (seen_build, item_id COLLATE "C")`);
    const trgmSchema = await ensureTrigram(q);
    if (trgmSchema) {
      await q.query(`CREATE INDEX tracks_search_trgm ON "index".tracks USING gin (search_text "${trgmSchema}".gin_trgm_ops)`);
    }
    await q.query(`
      CREATE TABLE "index".builds (
        generation bigserial PRIMARY KEY,
        state text NOT NULL CHECK (state IN ('building', 'live', 'retired', 'failed')),
        task_id text,
        reason text,
        dim integer,
        nlist integer,
        item_count integer,
        centroids bytea,
        pca bytea,
        created_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        error text
      )`);
    await q.query(`CREATE UNIQUE INDEX builds_one_live ON "index".builds ((true)) WHERE state = 'live'`);
    await q.query(`
      CREATE TABLE "index".cells (
        generation bigint NOT NULL REFERENCES "index".builds (generation) ON DELETE CASCADE,
        cell_id integer NOT NULL,
        row_ids bytea NOT NULL,
        item_ids text[] NOT NULL,
        vectors bytea NOT NULL,
        PRIMARY KEY (generation, cell_id)
      )`);
    await q.query(`
      CREATE TABLE "index".map_projections (
        generation bigint PRIMARY KEY REFERENCES "index".builds (generation) ON DELETE CASCADE,
        coords bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE "index".artist_profiles (
        generation bigint NOT NULL REFERENCES "index".builds (generation) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        artist_key text NOT NULL,
        artist_name text NOT NULL,
        weights bytea NOT NULL,
        means bytea NOT NULL,
        variances bytea NOT NULL,
        song_rows bytea NOT NULL,
        component_sizes bytea NOT NULL,
        PRIMARY KEY (generation, ordinal)
      )`);
    await q.query(`
      CREATE TABLE "index".artist_links (
        generation bigint NOT NULL REFERENCES "index".builds (generation) ON DELETE CASCADE,
        server_id text NOT NULL,
        artist_key text NOT NULL,
        provider_artist_id text NOT NULL,
        PRIMARY KEY (generation, server_id, artist_key)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".artist_links');
    await q.query('DROP TABLE "index".artist_profiles');
    await q.query('DROP TABLE "index".map_projections');
    await q.query('DROP TABLE "index".cells');
    await q.query('DROP TABLE "index".builds');
    await q.query('DROP TABLE "index".tracks');
  }
}

/**
 * Makes pg_trgm available and returns the schema holding it, or undefined when it cannot be created
 * (the attempt runs under a savepoint so the migration's transaction survives a refusal).
 */
async function ensureTrigram(q: QueryRunner): Promise<string | undefined> {
  const existing: Array<{ schema: string }> = await q.query(
    `SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`,
  );
  if (existing[0]) return existing[0].schema;
  const inTransaction = q.isTransactionActive;
  if (inTransaction) await q.query('SAVEPOINT index_trgm');
  try {
    await q.query('CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA "index"');
    if (inTransaction) await q.query('RELEASE SAVEPOINT index_trgm');
    return 'index';
  } catch {
    if (inTransaction) await q.query('ROLLBACK TO SAVEPOINT index_trgm');
    return undefined;
  }
}
