import type { IndexLive } from '@polyphony/contracts';
import type { IndexState } from '../core/generation';
import type { GenerationStore, ReplicaStore } from './ports';

/**
 * What GET /internal/index/live answers (`IndexLive`): the generation this replica serves, when its build began
 * (database clock: every song stored before is queryable there) and every replica's heartbeat report
 * (`live` = heart-beat within `liveWithinMs`). `generation` 0 means nothing is built yet.
 */
export class LiveGenerationService {
  constructor(
    private readonly state: IndexState,
    private readonly generations: Pick<GenerationStore, 'buildStartedAt'>,
    private readonly replicas: ReplicaStore,
    readonly liveWithinMs: number,
  ) {}

  async live(): Promise<IndexLive> {
    const g = this.state.current();
    const startedAt = g.generation > 0 ? await this.generations.buildStartedAt(g.generation) : undefined;
    const reports = await this.replicas.list(this.liveWithinMs);
    return {
      generation: g.generation,
      items: g.index.size,
      buildStartedAt: startedAt?.toISOString() ?? null,
      replicas: reports.map((x) => ({ replica: x.replicaId, generation: x.generation, items: x.items, buildStartedAt: x.buildStartedAt?.toISOString() ?? null, heartbeatAt: x.heartbeatAt.toISOString(), live: x.live })),
      liveWithinMs: this.liveWithinMs,
    };
  }
}
