/**
 * Planner of the one-time id-scheme relabel (spec "Content identity" 4, "Versioning" 2): every score
 * row minted under an older rule (an older fp_<v> id, or a legacy row keyed by a provider id) gets an
 * id of the target scheme version, computed from its stored embedding; under fp_4 every existing merge
 * is re-verified first and files that fail are split off.
 *
 * Pure and chunked. The planner reads rows through {@link RelabelRowSource} in chunks and hands one
 * {@link RelabelChunkPlan} per chunk to a sink; it never holds embeddings beyond the current chunk and
 * never enumerates pairs. Each row does one band lookup (bands.ts) against the rows already placed, so
 * the work is one lookup per row, not the all-pairs band blocking that ran the reference out of memory
 * at 290k rows (issue #777). State kept across chunks, per placed row: its signature (28 bytes), band
 * chain links (44 bytes), duration, old and new id strings; about 200 bytes per row.
 *
 * Two passes:
 * 1. scan({ selection: 'current' }): rows whose id is already of the target version (or fp_0) keep
 *    their id; they are registered so that legacy rows can merge into them and never mint an id they
 *    hold. Running the planner again after its plan was applied therefore finds only current rows and
 *    plans nothing (idempotent).
 * 2. scan({ selection: 'legacy' }): every other row, in the source's stable order, is placed:
 *    a. unsignable embedding -> fp_0 id of its first mapping (kept apart);
 *    b. under fp_4, a row with several mappings is re-verified ({@link verifyGroup});
 *    c. the row is decided like a new track (decide.ts judgeCandidates) against the rows placed so far:
 *       merge into an equal one, else mint the first free id for its signature.
 * The result depends only on the rows and their order, so a source must scan in a stable order
 * (e.g. ORDER BY old id). The selection is a hint: the planner classifies every row itself and
 * ignores rows delivered by the wrong scan.
 *
 * How a store applies the plans (one write pass per table, in one transaction, with the similarity
 * indexes repointed in the same transaction; spec "Content identity" 4):
 * - relabel / unsignable: score row oldId is renamed newId; its mappings follow, except detached ones.
 * - merge: score row oldId duplicates newId's content: delete it; its mappings (except detached ones)
 *   are repointed to newId; its vector is dropped from the similarity indexes.
 * - detached: that mapping row is deleted, so the next analysis treats the file as unmapped, analyses
 *   it and decides its identity from its own audio (a detached copy of the same song re-binds there).
 * Writing each chunk's plan to a temporary table and applying it once at the end keeps memory flat.
 * Concurrency: the relabel runs once at the start of the web container, before any analysis worker
 * writes; the store must hold a lock (e.g. a PostgreSQL advisory lock) while planning and applying,
 * and record the scheme version in the same transaction so later starts are no-ops.
 */
import { BandLayout, BandedSignatureIndex, assertBandLayout, bandLayoutForTolerance } from './bands';
import { IdentityConfig, identityConfigProblems } from './constants';
import { judgeCandidates, mintCanonicalId } from './decide';
import { durationsAgree, folderVeto, isKnownDuration, isSameFile, normalisePath } from './gates';
import type { IdentityCandidate, TrackFile } from './identity-candidate-source';
import { SchemeVersion, asSchemeVersion, schemeRules } from './scheme';
import { canonicalIdVersion, computeSignature, parseCanonicalId, unsignableCanonicalId, unsignableIdFromKey, UNSIGNABLE_VERSION } from './signature';

/** A mapping row of a score row: one provider file, with its metadata duration. */
export interface RelabelMapping extends TrackFile {
  /** Duration from the server's metadata listing, seconds, or null. */
  readonly durationSeconds: number | null;
}

/** A score row as the relabel reads it. */
export interface RelabelRow {
  /** Current item id (fp_<v>... or a legacy provider id). */
  readonly oldId: string;
  /** Stored raw embedding, or null when missing. */
  readonly embedding: ArrayLike<number> | null;
  /** Stored duration of the analysed file, seconds, or null. */
  readonly durationSeconds: number | null;
  /** Stored raw Chromaprint, if any. */
  readonly chromaprint?: ArrayLike<number> | null;
  /** Stored path of the analysed file, if known: identifies which mapping the embedding came from. */
  readonly filePath?: string | null;
  /** Its mapping rows, in preference order (the default server's files first). */
  readonly mappings: readonly RelabelMapping[];
}

/** Which rows a scan should deliver. */
export type RowSelection = 'current' | 'legacy';

/** Read port of the relabel. */
export interface RelabelRowSource {
  /**
   * Streams score rows in chunks, in a stable order. `selection` is a filter hint: 'current' = rows
   * whose id is fp_<targetVersion>... or fp_0...; 'legacy' = all others. Delivering more is harmless.
   */
  scan(request: { readonly selection: RowSelection; readonly targetVersion: SchemeVersion; readonly chunkSize: number }): AsyncIterable<readonly RelabelRow[]>;
  /** Rows by old id (missing ids are left out); used for candidates found in earlier chunks. */
  loadRows(oldIds: readonly string[]): Promise<readonly RelabelRow[]>;
}

/** New id of one legacy row. */
export interface RelabelEntry {
  readonly oldId: string;
  readonly newId: string;
  /** 'relabel': row renamed; 'merge': row is a copy of newId's song; 'unsignable': renamed into fp_0. */
  readonly kind: 'relabel' | 'merge' | 'unsignable';
}

/** A mapping split off a merged group. */
export interface DetachedMapping {
  /** Row it belonged to. */
  readonly oldId: string;
  readonly serverId: string;
  readonly providerId: string;
  readonly reason: 'duration-mismatch' | 'unknown-duration' | 'same-folder' | 'unsignable-group';
}

/** Output for one chunk of legacy rows. */
export interface RelabelChunkPlan {
  /** 0-based number of the legacy chunk. */
  readonly chunk: number;
  readonly relabels: readonly RelabelEntry[];
  readonly detached: readonly DetachedMapping[];
}

/** Counters of a planner run. */
export interface RelabelSummary {
  readonly targetVersion: SchemeVersion;
  /** Rows already at the target version (kept). */
  readonly currentRows: number;
  /** Legacy rows planned. */
  readonly legacyRows: number;
  readonly relabelled: number;
  readonly merged: number;
  readonly unsignable: number;
  readonly detachedMappings: number;
  /** New ids that had to skip taken ids. */
  readonly collisions: number;
  /** Rows delivered by a scan they do not belong to (ignored). */
  readonly ignoredRows: number;
  /** Stored codes examined by band lookups in total. */
  readonly scannedCodes: number;
  /** Candidates that reached the gates. */
  readonly gateChecks: number;
  /** Rows fetched through loadRows. */
  readonly loadedRows: number;
}

/** Planner options. */
export interface RelabelOptions {
  /** Rows per chunk asked of the source (default 5000). */
  readonly chunkSize?: number;
  /** Band layout (default: strided, tolerance + 1 bands). */
  readonly layout?: BandLayout;
  /** Expected row count, to size the index up front. */
  readonly expectedRows?: number;
}

/**
 * Whether an id needs no relabel for a target version: fp_<target>... or the version-independent
 * unsignable fp_0....
 */
export function isCurrentId(id: string, targetVersion: SchemeVersion): boolean {
  const v = canonicalIdVersion(id);
  return v === targetVersion || v === UNSIGNABLE_VERSION;
}

/** Result of {@link verifyGroup}. */
export interface GroupVerification {
  /** Mappings that stay with the row; the first is the anchor (the file the embedding came from). */
  readonly kept: readonly RelabelMapping[];
  readonly detached: readonly { readonly mapping: RelabelMapping; readonly reason: DetachedMapping['reason'] }[];
  /** Duration the row is compared with from now on: the row's, else the anchor's, else null. */
  readonly durationSeconds: number | null;
}

/**
 * fp_4 re-verification of one merged group (a score row with several mappings).
 *
 * Anchor: the mapping whose path equals the row's stored file path; else the first whose duration
 * agrees with the row's duration; else the first mapping (the default server's file, which analysis
 * processes first). Every other mapping stays only if it is the same file as the anchor, or its
 * metadata duration agrees with the reference duration (the row's, else the anchor's) within
 * `toleranceSeconds`, and it is not a different file in the same folder of the same server as a
 * mapping already kept. Unknown durations split (spec: unknown = different).
 */
export function verifyGroup(row: RelabelRow, toleranceSeconds: number): GroupVerification {
  const maps = row.mappings;
  const rowDuration = isKnownDuration(row.durationSeconds) ? row.durationSeconds : null;
  if (maps.length === 0) return { kept: [], detached: [], durationSeconds: rowDuration };
  const storedPath = normalisePath(row.filePath);
  let anchorIndex = storedPath === null ? -1 : maps.findIndex((m) => normalisePath(m.path) === storedPath);
  if (anchorIndex < 0 && rowDuration !== null) anchorIndex = maps.findIndex((m) => durationsAgree(m.durationSeconds, rowDuration, toleranceSeconds));
  if (anchorIndex < 0) anchorIndex = 0;
  const anchor = maps[anchorIndex] as RelabelMapping;
  const reference = rowDuration ?? (isKnownDuration(anchor.durationSeconds) ? anchor.durationSeconds : null);
  const kept: RelabelMapping[] = [anchor];
  const detached: { mapping: RelabelMapping; reason: DetachedMapping['reason'] }[] = [];
  maps.forEach((m, i) => {
    if (i === anchorIndex) return;
    if (isSameFile(m, anchor)) kept.push(m);
    else if (reference === null || !isKnownDuration(m.durationSeconds)) detached.push({ mapping: m, reason: 'unknown-duration' });
    else if (!durationsAgree(m.durationSeconds, reference, toleranceSeconds)) detached.push({ mapping: m, reason: 'duration-mismatch' });
    else if (folderVeto([m], kept)) detached.push({ mapping: m, reason: 'same-folder' });
    else kept.push(m);
  });
  return { kept, detached, durationSeconds: reference };
}

/** Growable per-entry state of placed rows. */
class PlacedRows {
  readonly oldIds: string[] = [];
  readonly newIds: string[] = [];
  readonly durations: number[] = [];
  /** Effective files of entries whose files differ from their stored row's mappings. */
  readonly filesOverride = new Map<number, TrackFile[]>();
}

/**
 * Plans the relabel to `config.schemeVersion`, calling `sink` once per legacy chunk (awaited before the
 * next chunk is read). See the module docs for the passes and how to apply a plan.
 *
 * @returns counters of the run.
 * @throws RangeError for an invalid config; errors of the source or the sink propagate.
 */
export async function planRelabel(
  source: RelabelRowSource,
  config: IdentityConfig,
  sink: (plan: RelabelChunkPlan) => Promise<void>,
  options: RelabelOptions = {},
): Promise<RelabelSummary> {
  const problems = identityConfigProblems(config);
  if (problems.length > 0) throw new RangeError(`invalid identity config: ${problems.join('; ')}`);
  const target = asSchemeVersion(config.schemeVersion);
  const rules = schemeRules(target);
  const chunkSize = options.chunkSize ?? 5000;
  const layout = options.layout ?? bandLayoutForTolerance(config.signatureMaxHamming);
  assertBandLayout(layout, config.signatureMaxHamming);
  const index = new BandedSignatureIndex(layout, options.expectedRows ?? 1024);
  const placed = new PlacedRows();
  const taken = new Set<string>();
  const isTaken = (id: string): boolean => taken.has(id);
  const counts = { current: 0, legacy: 0, relabelled: 0, merged: 0, unsignable: 0, detached: 0, collisions: 0, ignored: 0, scanned: 0, gateChecks: 0, loaded: 0 };

  const place = (oldId: string, newId: string, code: Uint32Array | null, duration: number | null): number => {
    taken.add(newId);
    if (!code) return -1;
    const e = index.add(code);
    placed.oldIds.push(oldId);
    placed.newIds.push(newId);
    placed.durations.push(duration ?? NaN);
    return e;
  };

  // Pass 1: rows that keep their id.
  for await (const chunk of source.scan({ selection: 'current', targetVersion: target, chunkSize })) {
    for (const row of chunk) {
      if (!isCurrentId(row.oldId, target)) {
        counts.ignored++;
        continue;
      }
      counts.current++;
      // fp_0 rows stay apart even if their embedding has become valid: they are never merge targets.
      const sig = row.embedding && canonicalIdVersion(row.oldId) !== UNSIGNABLE_VERSION ? computeSignature(row.embedding) : null;
      place(row.oldId, row.oldId, sig?.ok ? sig.code : null, isKnownDuration(row.durationSeconds) ? row.durationSeconds : null);
    }
  }

  // Pass 2: legacy rows.
  let chunkNo = 0;
  for await (const chunk of source.scan({ selection: 'legacy', targetVersion: target, chunkSize })) {
    const relabels: RelabelEntry[] = [];
    const detached: DetachedMapping[] = [];
    const chunkRows = new Map<string, RelabelRow>();
    for (const row of chunk) {
      if (isCurrentId(row.oldId, target)) {
        counts.ignored++;
        continue;
      }
      counts.legacy++;
      const sig = row.embedding ? computeSignature(row.embedding) : null;

      if (!sig || !sig.ok) {
        const first = row.mappings[0];
        const base = first ? unsignableCanonicalId(first.serverId, first.providerId) : unsignableIdFromKey(`legacy-row\0${row.oldId}`);
        const { id, collisions } = mintCanonicalId(UNSIGNABLE_VERSION, (parseCanonicalId(base) as { code: Uint32Array }).code, isTaken);
        counts.collisions += collisions > 0 ? 1 : 0;
        place(row.oldId, id, null, null);
        relabels.push({ oldId: row.oldId, newId: id, kind: 'unsignable' });
        counts.unsignable++;
        if (rules.verifyExistingMerges) {
          for (const m of row.mappings.slice(1)) {
            if (first && isSameFile(m, first)) continue;
            detached.push({ oldId: row.oldId, serverId: m.serverId, providerId: m.providerId, reason: 'unsignable-group' });
          }
        }
        chunkRows.set(row.oldId, row);
        continue;
      }

      let files: readonly TrackFile[] = row.mappings;
      let duration = isKnownDuration(row.durationSeconds) ? row.durationSeconds : null;
      if (rules.verifyExistingMerges && row.mappings.length > 1) {
        const check = verifyGroup(row, config.durationToleranceSeconds);
        files = check.kept;
        duration = check.durationSeconds;
        for (const d of check.detached) {
          detached.push({ oldId: row.oldId, serverId: d.mapping.serverId, providerId: d.mapping.providerId, reason: d.reason });
        }
      } else if (duration === null && row.mappings.length > 0) {
        const d = row.mappings[0]?.durationSeconds;
        duration = isKnownDuration(d) ? d : null;
      }

      // Candidates among rows placed so far.
      const hit = index.query(sig.code, config.signatureMaxHamming);
      counts.scanned += hit.scanned;
      const entries = rules.durationGate ? hit.entries.filter((e) => durationsAgree(placed.durations[e], duration, config.durationToleranceSeconds)) : hit.entries;
      const candidates: IdentityCandidate[] = [];
      const entryOfId = new Map<string, number>();
      if (entries.length > 0) {
        const missing = entries.map((e) => placed.oldIds[e] as string).filter((id) => !chunkRows.has(id));
        const loaded = new Map<string, RelabelRow>();
        if (missing.length > 0) {
          for (const r of await source.loadRows(missing)) loaded.set(r.oldId, r);
          counts.loaded += missing.length;
        }
        for (const e of entries) {
          const oldId = placed.oldIds[e] as string;
          const stored = chunkRows.get(oldId) ?? loaded.get(oldId);
          if (!stored || !stored.embedding) continue; // vanished or unreadable: cannot confirm, so no merge
          const d = placed.durations[e] as number;
          entryOfId.set(placed.newIds[e] as string, e);
          candidates.push({
            canonicalId: placed.newIds[e] as string,
            embedding: stored.embedding,
            durationSeconds: Number.isNaN(d) ? null : d,
            chromaprint: stored.chromaprint ?? null,
            files: placed.filesOverride.get(e) ?? stored.mappings,
          });
        }
      }
      const evidence = { embedding: row.embedding as ArrayLike<number>, durationSeconds: duration, chromaprint: row.chromaprint ?? null, files };
      const judgement = judgeCandidates(evidence, sig.code, candidates, config);
      counts.gateChecks += judgement.verdicts.filter((v) => v.gates !== null).length;

      if (judgement.chosen) {
        const targetId = judgement.chosen.canonicalId;
        placed.filesOverride.set(entryOfId.get(targetId) as number, [...judgement.chosen.files, ...files]);
        relabels.push({ oldId: row.oldId, newId: targetId, kind: 'merge' });
        counts.merged++;
      } else {
        const { id, collisions } = mintCanonicalId(target, sig.code, isTaken);
        if (collisions > 0) counts.collisions++;
        const e = place(row.oldId, id, sig.code, duration);
        if (files !== row.mappings) placed.filesOverride.set(e, [...files]);
        relabels.push({ oldId: row.oldId, newId: id, kind: 'relabel' });
        counts.relabelled++;
      }
      chunkRows.set(row.oldId, row);
    }
    counts.detached += detached.length;
    if (relabels.length > 0 || detached.length > 0) await sink({ chunk: chunkNo, relabels, detached });
    chunkNo++;
  }

  return {
    targetVersion: target,
    currentRows: counts.current,
    legacyRows: counts.legacy,
    relabelled: counts.relabelled,
    merged: counts.merged,
    unsignable: counts.unsignable,
    detachedMappings: counts.detached,
    collisions: counts.collisions,
    ignoredRows: counts.ignored,
    scannedCodes: counts.scanned,
    gateChecks: counts.gateChecks,
    loadedRows: counts.loaded,
  };
}
