import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropLeaseColumnsSql, taskRunUpgradeSql } from '@polyphony/platform';

/**
 * Clustering runs on the platform task-run module (issue 12: one run model for every batch kind):
 * `playlist.clustering_runs` gains the lease columns (owner, generation, expiry) and the lease scan
 * index; the parameters move into `details.params`, so the `params` column goes. Runs left live by the
 * previous version have no lease, so the first replica of this version takes them over and resumes.
 */
export class ClusteringRunLeases1733400000000 implements MigrationInterface {
  name = 'ClusteringRunLeases1733400000000';
  async up(q: QueryRunner): Promise<void> {
    for (const sql of taskRunUpgradeSql('playlist', 'clustering_runs')) await q.query(sql);
    await q.query(`UPDATE playlist.clustering_runs SET details = details || jsonb_build_object('params', params)`);
    await q.query(`ALTER TABLE playlist.clustering_runs DROP COLUMN params`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE playlist.clustering_runs ADD COLUMN params jsonb NOT NULL DEFAULT '{}'::jsonb`);
    await q.query(`UPDATE playlist.clustering_runs SET params = COALESCE(details->'params', '{}'::jsonb)`);
    for (const sql of dropLeaseColumnsSql('playlist', 'clustering_runs')) await q.query(sql);
  }
}
