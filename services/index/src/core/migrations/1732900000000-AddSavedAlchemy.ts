import type { MigrationInterface, QueryRunner } from 'typeorm';
import { TASK_RUN_COLUMNS_SQL, taskRunIndexesSql } from '@polyphony/platform';

/**
 * index schema, saved alchemy (issue 14 "Alchemy anchors and radios"):
 *
 * - anchors: user data (backed up; registry BACKUP_EXCLUDED_TABLES does not name it). `centroid` is the unit
 *   vector of the index's embedding space when it was saved (`dim` = its length), `exclusions` a JSON list of
 *   `{vector, distance}` re-applied where the anchor is used, `items` the recipe it was computed from (song ids
 *   canonical; NULL when saved as a ready centroid). Names are unique case-insensitively.
 * - radios: one per anchor (the reference's rule), deleted with it.
 * - radio_runs: the task-run table (platform task-run module) of `POST /api/radios/run`; run bookkeeping,
 *   left out of backups.
 */
export class AddSavedAlchemy1732900000000 implements MigrationInterface {
  name = 'AddSavedAlchemy1732900000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "index".anchors (
      id serial PRIMARY KEY,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      centroid real[] NOT NULL,
      dim integer NOT NULL,
      exclusions jsonb NOT NULL DEFAULT '[]'::jsonb,
      items jsonb,
      created_by text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX anchors_name ON "index".anchors (lower(name))`);
    await q.query(`CREATE TABLE "index".radios (
      id serial PRIMARY KEY,
      anchor_id integer NOT NULL UNIQUE REFERENCES "index".anchors(id) ON DELETE CASCADE,
      temperature double precision NOT NULL CHECK (temperature >= 0),
      n_results integer NOT NULL CHECK (n_results > 0),
      enabled boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE "index".radio_runs (${TASK_RUN_COLUMNS_SQL})`);
    for (const sql of taskRunIndexesSql('index', 'radio_runs')) await q.query(sql);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".radio_runs');
    await q.query('DROP TABLE "index".radios');
    await q.query('DROP TABLE "index".anchors');
  }
}
