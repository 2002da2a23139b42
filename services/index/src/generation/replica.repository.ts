import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';
import type { ReplicaReport, ReplicaStore } from './ports';

export type { ReplicaReport } from './ports';

interface Row {
  replica_id: string;
  generation: number;
  items: number;
  build_started_at: Date | null;
  heartbeat_at: Date;
  live: boolean;
}

/** Persistence of the per-replica reports (one row per serving replica, upserted by its heartbeat). */
export class ReplicaRepository implements ReplicaStore {
  constructor(private readonly ds: DataSource) {}

  /** Upserts this replica's row: the generation it serves (build start looked up in `index.builds`), heartbeat now. */
  async report(replicaId: string, generation: number, items: number): Promise<void> {
    await this.ds.query(
      `INSERT INTO "index".replicas (replica_id, generation, items, build_started_at, heartbeat_at)
       VALUES ($1, $2::integer, $3::integer, (SELECT created_at FROM "index".builds WHERE generation = $2::integer), now())
       ON CONFLICT (replica_id) DO UPDATE SET generation = EXCLUDED.generation, items = EXCLUDED.items,
         build_started_at = EXCLUDED.build_started_at, heartbeat_at = now()`,
      [replicaId, generation, items],
    );
  }

  /** Deletes this replica's row (graceful stop: it no longer serves). */
  async remove(replicaId: string): Promise<void> {
    await this.ds.query(`DELETE FROM "index".replicas WHERE replica_id = $1`, [replicaId]);
  }

  /**
   * Every reported replica, live ones first; `live` = heart-beat within `liveWithinMs` (database clock).
   * Rows silent for over an hour (and 10 windows) are deleted on the way: replicas that died long ago.
   */
  async list(liveWithinMs: number): Promise<ReplicaReport[]> {
    await this.ds.query(`DELETE FROM "index".replicas WHERE heartbeat_at < now() - make_interval(secs => $1)`, [Math.max(3600, (10 * liveWithinMs) / 1000)]);
    const rows = await queryRows<Row>(
      this.ds,
      `SELECT replica_id, generation, items, build_started_at, heartbeat_at, heartbeat_at >= now() - make_interval(secs => $1) AS live
         FROM "index".replicas ORDER BY live DESC, replica_id`,
      [liveWithinMs / 1000],
    );
    return rows.map((r) => ({ replicaId: r.replica_id, generation: Number(r.generation), items: Number(r.items), buildStartedAt: r.build_started_at, heartbeatAt: r.heartbeat_at, live: r.live }));
  }
}
