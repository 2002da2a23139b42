import type { DataSource } from 'typeorm';
import { TaskRunStore } from '@polyphony/platform';

/**
 * Persistence of clustering runs: the platform task-run table `playlist.clustering_runs` (one model
 * with analysis and radio runs: lifecycle, lease with heartbeat and fencing, cancel that ends the run
 * in the database). The run's parameters live in `details.params`, its per-server reports (the durable
 * results a replica taking the run over resumes from) in `details.clustering`.
 */
export class ClusteringRunRepository {
  /** The platform task-run store of `playlist.clustering_runs`. */
  readonly tasks: TaskRunStore;

  constructor(ds: DataSource) {
    this.tasks = new TaskRunStore(ds, 'playlist', 'clustering_runs', 'A clustering run is already in progress');
  }

  /** The run with this id (undefined for an unknown or malformed id). */
  find(id: string) {
    return this.tasks.find(id);
  }

  /** The live run (NEW or RUNNING), if any. */
  live() {
    return this.tasks.live();
  }

  /** True when a cancel ended the run (or it is gone). */
  isCancelled(id: string): Promise<boolean> {
    return this.tasks.isCancelled(id);
  }
}
