import type { IndexLive } from '@polyphony/contracts';

/** Whether a run's songs are queryable on every index replica (see {@link indexCoverage}). */
export interface IndexCoverage {
  ok: boolean;
  /** Live replicas counted (the answering replica alone when none reported). */
  replicas: number;
  /** Generation served by every counted replica when `ok` (the lowest one). */
  generation?: number;
  /** Counted replicas still serving a generation built before the request: `replica@generation`. */
  lagging: string[];
  /** Newest generation some counted replica serves that covers the request (what the laggards wait for). */
  target?: number;
}

/**
 * Issue 12 "SUCCESS means queryable": the songs a run stored before `requestedAt` are queryable once
 * every live index replica serves a generation whose build began at or after `requestedAt` (a build
 * snapshots the catalogue after it begins). Live = heart-beating (the index's `replicas[].live`).
 * With no live report at all (an index without replica rows) the answering replica alone decides.
 */
export function indexCoverage(live: IndexLive, requestedAt: Date): IndexCoverage {
  const since = requestedAt.getTime();
  const counted = live.replicas.filter((r) => r.live);
  const views = counted.length
    ? counted.map((r) => ({ name: r.replica, generation: r.generation, startedAt: r.buildStartedAt }))
    : [{ name: 'answering replica', generation: live.generation, startedAt: live.buildStartedAt }];
  const covers = (v: { startedAt: string | null }) => v.startedAt !== null && new Date(v.startedAt).getTime() >= since;
  const lagging = views.filter((v) => !covers(v)).map((v) => `${v.name}@${v.generation}`);
  const covering = views.filter(covers).map((v) => v.generation);
  return {
    ok: lagging.length === 0,
    replicas: views.length,
    ...(lagging.length === 0 ? { generation: Math.min(...covering) } : {}),
    lagging,
    ...(covering.length ? { target: Math.max(...covering) } : {}),
  };
}
