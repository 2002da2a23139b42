/**
 * When the live library asks for a full rebuild (issue 35): measured drift of a generation that grew by appended
 * rows, never the arrival of one song. Settings: INDEX_LIVE_* (config.ts), defaults below.
 */
import type { IvfIndex } from '@polyphony/vector-engine';

/** Drift thresholds; a full rebuild is requested when any is crossed. */
export interface DriftSettings {
  /**
   * Largest cell / mean cell size above which cells are too uneven (appended songs crowd a few cells, so probing
   * them costs more and recall drops). Default 8 (`INDEX_LIVE_MAX_CELL_IMBALANCE`); a full build's k-means at
   * 1M x 200-d gives about 3-4.
   */
  maxCellImbalance: number;
  /**
   * Recall@10 of the probe set (IVF search with the default nprobe vs exact search over the same generation) below
   * which the generation is rebuilt. Default 0.9 (`INDEX_LIVE_MIN_PROBE_RECALL`).
   */
  minProbeRecall: number;
  /** Songs of the probe set: appended rows first (they are the ones placed without training), then built rows. Default 100 (`INDEX_LIVE_PROBES`). */
  probes: number;
  /** Appended rows / built rows above which a rebuild is due whatever the measures say. Default 1.0 (`INDEX_LIVE_MAX_GROWTH`): the library doubled. */
  maxGrowth: number;
  /**
   * The probe recall (the expensive measure: `probes` exact scans of the whole generation, ~20 G multiply-adds at 1M x
   * 200-d) is measured again only once this share of the built rows was appended since it was last measured (and
   * always the first time); cell imbalance and growth are measured after every batch. Default 0.01
   * (`INDEX_LIVE_PROBE_EVERY`): at 1M once per 10,000 songs, where every batch of a few songs paid it before.
   */
  probeEvery: number;
}

/** Prefix of the rebuild reason the live library gives for measured drift; a build with it keeps nothing of the serving generation (`BuildHost.fresh`). */
export const LIVE_DRIFT_REASON = 'live library drift';

export const DEFAULT_DRIFT: DriftSettings = { maxCellImbalance: 8, minProbeRecall: 0.9, probes: 100, maxGrowth: 1.0, probeEvery: 0.01 };

/** What `measureDrift` found. */
export interface DriftReport {
  /** Largest cell / mean cell size. */
  cellImbalance: number;
  /** Recall@10 of the probe set against exact search (1 when there is nothing to probe), or the last one measured (`probed` false). */
  probeRecall: number;
  /** Appended rows / built rows. */
  growth: number;
  probes: number;
  /** False when `probeRecall` is the earlier measure passed in (`known`), not measured now. */
  probed: boolean;
  /** Why a rebuild is due; empty = none. */
  reasons: string[];
}

/** Probe neighbours compared (recall@K). */
const K = 10;

/**
 * Measures the drift of `index`, whose first `builtRows` rows came from its full build and the rest from appends.
 * Probe set: up to `settings.probes` rows, half from the appended rows and the rest from the built ones, evenly
 * spaced (deterministic); each is queried with its own vector (itself excluded) by IVF search and by exact search.
 * The exact searches run in one pass over the vectors (`IvfIndex.exactSearchMany`: the vectors read once, not once per
 * probe), yielding to `scheduler` between chunks of rows and between IVF searches, so the replica keeps answering.
 * With `known` (an earlier probe recall) the probes are not run and that figure is reported (`probed` false).
 * Cost: `probes` x size x dim multiply-adds (100 probes at 1M x 200-d: ~20 G, seconds of CPU).
 */
export async function measureDrift(
  index: IvfIndex,
  builtRows: number,
  settings: DriftSettings = DEFAULT_DRIFT,
  scheduler?: { maybeYield(): Promise<void> },
  known?: { probeRecall: number; probes: number },
): Promise<DriftReport> {
  const sizes = index.cellSizes();
  let largest = 0;
  for (const s of sizes) largest = Math.max(largest, s);
  const mean = index.nlist > 0 ? index.size / index.nlist : 0;
  const cellImbalance = mean > 0 ? largest / mean : 0;
  const appended = index.size - builtRows;
  const growth = builtRows > 0 ? appended / builtRows : appended > 0 ? Infinity : 0;
  let probeRecall = known?.probeRecall ?? 1;
  let probes = known?.probes ?? 0;
  if (!known) {
    const rows: number[] = [];
    const fromAppended = Math.min(appended, Math.ceil(settings.probes / 2));
    for (let i = 0; i < fromAppended; i++) rows.push(builtRows + Math.floor((i * appended) / fromAppended));
    const fromBuilt = Math.min(builtRows, settings.probes - fromAppended);
    for (let i = 0; i < fromBuilt; i++) rows.push(Math.floor((i * builtRows) / fromBuilt));
    probes = rows.length;
    let hit = 0;
    let total = 0;
    if (index.size > 1 && rows.length > 0) {
      const k = Math.min(K, index.size - 1);
      const queries = new Float32Array(rows.length * index.dim);
      rows.forEach((row, j) => queries.set(index.getVector(row), j * index.dim));
      const truths = await index.exactSearchMany(queries, k, rows.map((row) => [row]), scheduler);
      for (let j = 0; j < rows.length; j++) {
        const truth = new Set(truths[j]!.map((h) => h.row));
        for (const h of index.search(queries.subarray(j * index.dim, (j + 1) * index.dim), { k, exclude: [rows[j]!] })) if (truth.has(h.row)) hit++;
        total += truth.size;
        await scheduler?.maybeYield();
      }
    }
    probeRecall = total > 0 ? hit / total : 1;
  }
  const reasons: string[] = [];
  if (cellImbalance > settings.maxCellImbalance) reasons.push(`cell imbalance ${cellImbalance.toFixed(1)} > ${settings.maxCellImbalance}`);
  if (probeRecall < settings.minProbeRecall) reasons.push(`probe recall@10 ${probeRecall.toFixed(3)} < ${settings.minProbeRecall}`);
  if (growth > settings.maxGrowth) reasons.push(`grown by ${(growth * 100).toFixed(0)}% since the build (> ${(settings.maxGrowth * 100).toFixed(0)}%)`);
  return { cellImbalance, probeRecall, growth, probes, probed: !known, reasons };
}
