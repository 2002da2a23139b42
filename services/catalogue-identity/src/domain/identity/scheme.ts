/**
 * What each CATALOGUE_ID_SCHEME_VERSION means (spec "Versioning" 2; reference-implementation.md 2.6):
 *
 * - fp_2: signature proposes, exact cosine distance decides.
 * - fp_3: adds the duration gate (unknown duration on either side = different).
 * - fp_4: the fp_3 rules, and the one-time relabel to fp_4 also re-verifies every existing merge
 *   (every group of provider files sharing one score row) at the configured (tightened) duration
 *   tolerance and with the same-folder veto, and splits off the files that do not pass.
 *
 * Independent of the version, two safeguards can only ever split, never merge, so they are applied
 * under every version: the same-folder veto (two different files in one folder of one server are
 * never one song) and the Chromaprint gate (CHROMAPRINT_GATE_ENABLED, abstaining without two prints).
 * Versions 2 and 3 exist to read and relabel rows minted under them; running new analyses under them
 * brings back the false merges reported in the reference's issues #762 and #773.
 */

/** A supported id-scheme version. */
export type SchemeVersion = 2 | 3 | 4;

/** Versions this code can mint and relabel to. */
export const SUPPORTED_SCHEME_VERSIONS: readonly SchemeVersion[] = [2, 3, 4];

/** The rules one scheme version applies. */
export interface SchemeRules {
  readonly version: SchemeVersion;
  /** Duration gate on (fp_3 and later). */
  readonly durationGate: boolean;
  /** The relabel to this version splits existing merged groups that fail the gates (fp_4). */
  readonly verifyExistingMerges: boolean;
}

/**
 * Narrows a number to a supported version.
 * @throws RangeError for anything but 2, 3 or 4.
 */
export function asSchemeVersion(version: number): SchemeVersion {
  if (version === 2 || version === 3 || version === 4) return version;
  throw new RangeError(`unsupported CATALOGUE_ID_SCHEME_VERSION ${version}; supported: ${SUPPORTED_SCHEME_VERSIONS.join(', ')}`);
}

/** Rules of one version. @throws RangeError for an unsupported version. */
export function schemeRules(version: number): SchemeRules {
  const v = asSchemeVersion(version);
  return { version: v, durationGate: v >= 3, verifyExistingMerges: v >= 4 };
}
