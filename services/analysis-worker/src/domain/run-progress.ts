import type { ServerTaskCounts } from '@polyphony/contracts';
import type { OutcomeCounts, RunServerRow } from './ports';

/**
 * The board's per-server counts of an analysis run: the durable enumeration counters of `rows` (run order) plus
 * the per-track outcome rows of each server (`outcomes`, by server id). Songs re-analysed for MusiCNN tags count as
 * analysed, songs only fingerprinted as skipped (mapped); `queued` = enqueued tracks without an outcome yet (not shown on the board).
 */
export function serverCounts(rows: RunServerRow[], outcomes: Map<string, OutcomeCounts>): Array<ServerTaskCounts & { queued: number }> {
  return rows.map((r) => {
    const o: OutcomeCounts = outcomes.get(r.serverId) ?? { analyzed: 0, mapped_existing: 0, skipped_mapped: 0, retagged: 0, fingerprinted: 0, failed: 0, excluded: 0, cancelled: 0, queued: 0 };
    return {
      serverId: r.serverId,
      serverName: r.serverName,
      seen: Math.max(r.seen, o.analyzed + o.retagged + o.fingerprinted + o.mapped_existing + o.skipped_mapped + o.failed + o.excluded + o.cancelled + o.queued + r.skippedMapped + r.excluded),
      // songs only given their missing recording fingerprint were mapped already (the board has no separate column)
      skippedMapped: r.skippedMapped + o.skipped_mapped + o.fingerprinted,
      mappedExisting: o.mapped_existing,
      // songs re-analysed for MusiCNN tags count as analysed (the board has no separate column)
      analyzed: o.analyzed + o.retagged,
      failed: r.excluded + o.failed + o.excluded,
      status: r.status,
      ...(r.error && r.status === 'failed' ? { error: r.error } : {}),
      queued: o.queued,
    };
  });
}

/**
 * A run's progress, 0-95 (the last 5 are the index wait and the end): each server counts 1 once done, failed or
 * cancelled; the running one 5% for its enumeration (approaching it as tracks are seen), then 95% of its share by
 * finished tracks. `counts` are {@link serverCounts} of the same `rows`.
 */
export function runProgress(rows: RunServerRow[], counts: Array<ServerTaskCounts & { queued: number }>): number {
  let sum = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const c = counts[i]!;
    if (r.status === 'done' || r.status === 'failed' || r.status === 'cancelled') sum += 1;
    else if (r.status === 'running') {
      const total = c.seen - r.skippedMapped - r.excluded;
      const finished = total - c.queued;
      sum += r.enumerated ? 0.05 + 0.95 * (total > 0 ? finished / total : 1) : 0.05 * Math.min(1, c.seen / Math.max(1, c.seen + 1000));
    }
  }
  return rows.length ? Math.min(95, (sum / rows.length) * 95) : 95;
}
