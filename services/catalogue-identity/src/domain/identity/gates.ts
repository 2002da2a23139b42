/**
 * The gates of the same/different decision (spec "Content identity" 2-3). A candidate is the same song
 * only when every gate that votes agrees; any failing gate, and any doubt (unknown duration,
 * incomparable embeddings), splits. A false split costs a duplicate row; a false merge loses a song.
 *
 * Gates, cheapest first; evaluation stops at the first failure (later gates report 'skipped'):
 * 1. folder veto: a file of one side and a file of the other on the same server, in the same folder,
 *    that are not the same file -> different (reference 2.6 "folder veto").
 * 2. duration (scheme fp_3+): |a - b| <= DURATION_TOLERANCE_SECONDS; unknown or <= 0 on either
 *    side -> different.
 * 3. cosine: exact cosine distance of the raw embeddings <= DUPLICATE_DISTANCE_THRESHOLD_COSINE.
 * 4. Chromaprint (CHROMAPRINT_GATE_ENABLED): best-alignment bit agreement >=
 *    CHROMAPRINT_MATCH_THRESHOLD; abstains when either print is missing or no alignment overlaps
 *    enough.
 */
import { chromaprintAlignment, cosineDistance } from '@polyphony/vectors';
import type { IdentityConfig } from './constants';
import type { TrackEvidence, TrackFile } from './identity-candidate-source';
import { schemeRules } from './scheme';

/** Whether a duration is usable: a finite number of seconds above zero. */
export function isKnownDuration(seconds: number | null | undefined): seconds is number {
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0;
}

/**
 * Duration gate: both durations known and |a - b| <= toleranceSeconds. Unknown (null, NaN, <= 0) on
 * either side -> false (spec Errors: "duration unknown on either side ... tracks kept apart").
 */
export function durationsAgree(a: number | null | undefined, b: number | null | undefined, toleranceSeconds: number): boolean {
  return isKnownDuration(a) && isKnownDuration(b) && Math.abs(a - b) <= toleranceSeconds;
}

/**
 * Normalised full path for comparisons: backslashes to '/', Unicode NFC, lower case, repeated and
 * trailing slashes collapsed, './' segments dropped. Case folding errs towards "same folder", which
 * can only split. Null for a missing or empty path.
 */
export function normalisePath(path: string | null | undefined): string | null {
  if (typeof path !== 'string') return null;
  const p = path.replace(/\\/g, '/').normalize('NFC').toLowerCase();
  const segments = p.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.length === 0) return null;
  return (p.startsWith('/') ? '/' : '') + segments.join('/');
}

/** Parent folder of a normalised path, or null when the path has no folder part. */
export function parentFolder(normalisedPath: string): string | null {
  const slash = normalisedPath.lastIndexOf('/');
  return slash < 0 ? null : normalisedPath.slice(0, slash);
}

/** Whether two provider entries are one file: same server and same provider id or same normalised path. */
export function isSameFile(a: TrackFile, b: TrackFile): boolean {
  if (a.serverId !== b.serverId) return false;
  if (a.providerId === b.providerId) return true;
  const pa = normalisePath(a.path);
  return pa !== null && pa === normalisePath(b.path);
}

/**
 * Same-folder veto between two single files: same server, both paths known, same parent folder, and
 * not the same file. Different servers never veto (a song is expected on several servers).
 */
export function sameFolderDifferentFile(a: TrackFile, b: TrackFile): boolean {
  if (a.serverId !== b.serverId || isSameFile(a, b)) return false;
  const pa = normalisePath(a.path);
  const pb = normalisePath(b.path);
  if (pa === null || pb === null) return false;
  const fa = parentFolder(pa);
  return fa !== null && fa === parentFolder(pb);
}

/** Same-folder veto between two sets of files: true when any pair vetoes. */
export function folderVeto(a: readonly TrackFile[], b: readonly TrackFile[]): boolean {
  for (const x of a) for (const y of b) if (sameFolderDifferentFile(x, y)) return true;
  return false;
}

/** Outcome of one gate. 'off' = disabled by config or scheme; 'skipped' = an earlier gate failed. */
export type GateOutcome = 'pass' | 'fail' | 'abstain' | 'off' | 'skipped';

/** Per-gate result of comparing an incoming track with one candidate. */
export interface GateReport {
  readonly folder: 'pass' | 'fail';
  readonly duration: GateOutcome;
  readonly cosine: GateOutcome;
  /** Cosine distance when computed, else null. NaN means incomparable embeddings. */
  readonly cosineDistance: number | null;
  readonly chromaprint: GateOutcome;
  /** Best bit agreement when computed, else null. */
  readonly chromaprintSimilarity: number | null;
  /** True only when no gate failed. */
  readonly same: boolean;
}

/**
 * Runs every gate of the configured scheme on two sides.
 * @param track the incoming side.
 * @param candidate the stored side.
 * @param config thresholds and scheme version (see constants.ts).
 */
export function evaluateGates(track: TrackEvidence, candidate: TrackEvidence, config: IdentityConfig): GateReport {
  const rules = schemeRules(config.schemeVersion);
  const fail = (partial: Partial<GateReport>): GateReport => ({
    folder: 'pass',
    duration: 'skipped',
    cosine: 'skipped',
    cosineDistance: null,
    chromaprint: 'skipped',
    chromaprintSimilarity: null,
    ...partial,
    same: false,
  });

  if (folderVeto(track.files, candidate.files)) return fail({ folder: 'fail' });

  let duration: GateOutcome = 'off';
  if (rules.durationGate) {
    if (!durationsAgree(track.durationSeconds, candidate.durationSeconds, config.durationToleranceSeconds)) return fail({ duration: 'fail' });
    duration = 'pass';
  }

  const distance = cosineDistance(track.embedding, candidate.embedding);
  if (!(distance <= config.duplicateDistanceThresholdCosine)) return fail({ duration, cosine: 'fail', cosineDistance: distance });

  let chromaprint: GateOutcome = 'off';
  let similarity: number | null = null;
  if (config.chromaprintGateEnabled) {
    if (track.chromaprint && candidate.chromaprint && track.chromaprint.length > 0 && candidate.chromaprint.length > 0) {
      const match = chromaprintAlignment(track.chromaprint, candidate.chromaprint, {
        maxOffset: config.chromaprintMaxAlignOffset,
        minOverlap: config.chromaprintMinOverlap,
      });
      if (match === null) chromaprint = 'abstain';
      else {
        similarity = match.similarity;
        chromaprint = match.similarity >= config.chromaprintMatchThreshold ? 'pass' : 'fail';
      }
    } else chromaprint = 'abstain';
  }
  const report: GateReport = {
    folder: 'pass',
    duration,
    cosine: 'pass',
    cosineDistance: distance,
    chromaprint,
    chromaprintSimilarity: similarity,
    same: chromaprint !== 'fail',
  };
  return report;
}
