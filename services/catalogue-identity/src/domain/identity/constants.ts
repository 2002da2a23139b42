/**
 * Tunable defaults of the content-identity decision, in one place.
 *
 * CALIBRATION STATUS. The embedder-dependent values (cosine threshold, Hamming radius) were set from
 * a run of bench/src/analysis-worker/identity-calibration.ts against the default embedder
 * 'dsp-v1' (2026-11-21, 41 Wesnoth tracks x 5 copies: MP3 128k, AAC 128k, Opus 96k, FLAC, FLAC
 * trimmed by 1.5 s; 820 pairs of different tracks). That corpus is small: its closest different
 * pair is far closer to the copies than the reference's MusiCNN geometry, and a 100k-song library
 * will hold different songs closer still, so the cosine gate is NOT a safe separator on its own;
 * the duration and Chromaprint gates carry the weight. Re-run the calibration (and revisit these
 * values) whenever the embedder or its normalisation constants change. Each constant says where its
 * value comes from.
 *
 * The spec's configuration names (service-spec.md "Resources and their fields") map one-to-one on
 * the fields of {@link IdentityConfig}; the service's config loader reads the stored values and
 * falls back to these defaults.
 */

/**
 * Id-scheme version written into new ids (`fp_<version>...`). Spec "Versioning" 2; the reference is
 * at 4. Supported: 2, 3, 4 (see scheme.ts).
 */
export const CATALOGUE_ID_SCHEME_VERSION = 4;

/**
 * Largest Hamming distance (bits out of 200) between two signatures for the stored song to be
 * considered a candidate at all. Reference value 10 (section 2.6: SIGNATURE_MATCH_MAX_HAMMING).
 * It only widens or narrows the candidate set; the gates decide. Measured on dsp-v1 (calibration
 * above): re-encoded copies median 2-3 bits, p95 5-10, max 14 (one AAC copy; Opus max 11), so a few
 * percent of lossy copies are not proposed and stay a harmless duplicate; different tracks min 25,
 * median 71. Set to 16 so every measured copy (max 14) is proposed, with 9 bits to the closest
 * different pair; the gates still decide. Cost: 17 bands instead of 11 (see bands.ts).
 */
export const SIGNATURE_MATCH_MAX_HAMMING = 16;

/**
 * Largest cosine distance (1 - cos, on the raw embeddings) for two tracks to be the same song.
 * Reference value for MusiCNN: 0.01. Measured on dsp-v1 (calibration above), original -> copy:
 * MP3 128k median 0.0011 / max 0.0085, AAC 128k median 0.0015 / p95 0.0110 / max 0.0183, Opus 96k
 * median 0.0029 / p95 0.0131 / max 0.0262, FLAC 0; different tracks min 0.0819, p1 0.1625, median
 * 0.5551. 0.04 admits every measured copy (max 0.026, 1.5x margin; 0.01 would split about 5 % of
 * AAC and Opus copies) and stays 2x below the closest different pair of the corpus (0.082). It is
 * not the only guard: a merge also needs durations within 1 s and, when both files have one,
 * Chromaprints agreeing at >= 0.95 (copies >= 0.977, different recordings <= 0.762), so two
 * different songs would have to agree on all three to merge.
 */
export const DUPLICATE_DISTANCE_THRESHOLD_COSINE = 0.04;

/**
 * Cosine thresholds of embedder versions other than dsp-v1, as a factor on the DUPLICATE_DISTANCE_THRESHOLD_COSINE
 * setting (which is calibrated for dsp-v1): the gate of a version v is setting x factor[v], so an admin who
 * tightens the setting tightens every version alike. Vectors of different versions are never compared (the
 * catalogue serves one version at a time, store/embedding-switch.repository.ts). Calibration of each factor:
 * docs/musicnn.md "Identity threshold".
 *
 * tfjs:musicnn-fusion-v1: bench/src/analysis-worker/learned-identity-calibration.ts (2026-11-26, 4 patches, the
 * 41 Wesnoth tracks; MP3 128k / AAC 128k / Opus 96k / FLAC copies of 10 of them): re-encodings max 0.0097
 * (MP3 0.0080, AAC 0.0097, Opus 0.0088, FLAC 0), 820 pairs of different tracks min 0.158, p1 0.194; the geometric
 * mean of the two edges is 0.039, so factor 1 (0.04: x4.1 above the worst copy, x3.9 below the closest different
 * pair). Signatures: copies within 13 bits, different tracks at least 63 apart (the radius stays 16).
 */
export const EMBEDDER_COSINE_THRESHOLD_FACTOR: Readonly<Record<string, number>> = Object.freeze({
  'tfjs:musicnn-fusion-v1': 1,
});

/**
 * Largest difference, in seconds, between two track durations for them to be the same song. Reference
 * value 1.0 s, the "tightened" tolerance that scheme fp_4 re-verifies merges with (section 2.6,
 * issues #762/#773). Measured (calibration above): re-encodings differ by at most 0.0224 s (AAC
 * padding), a 45x margin; a copy cut by 1.5 s is split, which is the intended side to err on.
 */
export const DURATION_TOLERANCE_SECONDS = 1.0;

/** Whether the Chromaprint gate votes when both tracks have a fingerprint. Reference default: on. */
export const CHROMAPRINT_GATE_ENABLED = true;

/**
 * Smallest best-alignment bit agreement (fraction of equal bits, 0..1) between two raw Chromaprint
 * fingerprints for the gate to pass. Reference value 0.95 (section 2.6), confirmed on real audio by
 * bench/src/catalogue-identity/chromaprint-calibration.ts (fpcalc 1.5.1, the 41 Wesnoth Ogg tracks, offsets +-12,
 * min overlap 40): same recording re-encoded as MP3 128k min 0.9926 / p50 0.9952, Opus 64k min
 * 0.9766 / p50 0.9850, 0.5 s delayed min 0.9920; 780 pairs of different recordings p50 0.5185,
 * p99 0.6004, max 0.7620. At 0.95: 0/120 same-recording pairs split, 0/780 different pairs merged.
 * One 5.5 s track abstained (fewer than 40 overlapping items). The analysis-worker calibration
 * (its own print comparison) agrees: copies >= 0.9855 (1.5 s trimmed copy 0.9566), different tracks
 * <= 0.8008. Not embedder dependent.
 */
export const CHROMAPRINT_MATCH_THRESHOLD = 0.95;

/**
 * Alignment search range, in fingerprint items (one item = 4096/3 samples at 11025 Hz, about
 * 0.124 s): offsets -12..+12, about +-1.5 s. Reference value (section 2.6).
 */
export const CHROMAPRINT_MAX_ALIGN_OFFSET = 12;

/**
 * Fewest overlapping items (about 5 s) an alignment needs to count; with fewer at every offset the
 * gate abstains. Reference value (section 2.6).
 */
export const CHROMAPRINT_MIN_OVERLAP = 40;

/**
 * Every knob of the identity decision. Field names follow the spec's configuration names in camel
 * case; units are in the docstrings.
 */
export interface IdentityConfig {
  /** CATALOGUE_ID_SCHEME_VERSION: 2, 3 or 4. */
  readonly schemeVersion: number;
  /** Candidate radius in bits (0..200). */
  readonly signatureMaxHamming: number;
  /** DUPLICATE_DISTANCE_THRESHOLD_COSINE: cosine distance, 0..2. */
  readonly duplicateDistanceThresholdCosine: number;
  /** DURATION_TOLERANCE_SECONDS: seconds, >= 0. */
  readonly durationToleranceSeconds: number;
  /** CHROMAPRINT_GATE_ENABLED. */
  readonly chromaprintGateEnabled: boolean;
  /** Bit agreement 0..1. */
  readonly chromaprintMatchThreshold: number;
  /** Fingerprint items, >= 0. */
  readonly chromaprintMaxAlignOffset: number;
  /** Fingerprint items, >= 1. */
  readonly chromaprintMinOverlap: number;
}

/** The defaults above as one frozen config object. */
export const DEFAULT_IDENTITY_CONFIG: IdentityConfig = Object.freeze({
  schemeVersion: CATALOGUE_ID_SCHEME_VERSION,
  signatureMaxHamming: SIGNATURE_MATCH_MAX_HAMMING,
  duplicateDistanceThresholdCosine: DUPLICATE_DISTANCE_THRESHOLD_COSINE,
  durationToleranceSeconds: DURATION_TOLERANCE_SECONDS,
  chromaprintGateEnabled: CHROMAPRINT_GATE_ENABLED,
  chromaprintMatchThreshold: CHROMAPRINT_MATCH_THRESHOLD,
  chromaprintMaxAlignOffset: CHROMAPRINT_MAX_ALIGN_OFFSET,
  chromaprintMinOverlap: CHROMAPRINT_MIN_OVERLAP,
});

/**
 * Checks every field's range and returns the list of problems (empty when valid), so a config loader
 * can report all invalid keys at once.
 */
export function identityConfigProblems(config: IdentityConfig): string[] {
  const problems: string[] = [];
  if (![2, 3, 4].includes(config.schemeVersion)) problems.push('schemeVersion must be 2, 3 or 4');
  if (!Number.isInteger(config.signatureMaxHamming) || config.signatureMaxHamming < 0 || config.signatureMaxHamming > 30) {
    problems.push('signatureMaxHamming must be an integer in 0..30');
  }
  if (!(config.duplicateDistanceThresholdCosine >= 0 && config.duplicateDistanceThresholdCosine <= 2)) {
    problems.push('duplicateDistanceThresholdCosine must be in 0..2');
  }
  if (!(config.durationToleranceSeconds >= 0) || !Number.isFinite(config.durationToleranceSeconds)) {
    problems.push('durationToleranceSeconds must be a finite number >= 0');
  }
  if (!(config.chromaprintMatchThreshold >= 0 && config.chromaprintMatchThreshold <= 1)) {
    problems.push('chromaprintMatchThreshold must be in 0..1');
  }
  if (!Number.isInteger(config.chromaprintMaxAlignOffset) || config.chromaprintMaxAlignOffset < 0) {
    problems.push('chromaprintMaxAlignOffset must be an integer >= 0');
  }
  if (!Number.isInteger(config.chromaprintMinOverlap) || config.chromaprintMinOverlap < 1) {
    problems.push('chromaprintMinOverlap must be an integer >= 1');
  }
  return problems;
}

/** The config of decisions between vectors of `embedderVersion`: the cosine threshold scaled by its factor (EMBEDDER_COSINE_THRESHOLD_FACTOR). */
export function identityConfigForVersion(config: IdentityConfig, embedderVersion: string): IdentityConfig {
  const factor = EMBEDDER_COSINE_THRESHOLD_FACTOR[embedderVersion];
  return factor === undefined ? config : { ...config, duplicateDistanceThresholdCosine: Math.min(2, config.duplicateDistanceThresholdCosine * factor) };
}
