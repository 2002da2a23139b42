/**
 * What the identity decision needs from storage, as plain domain types. The catalogue store
 * implements {@link IdentityCandidateSource} over PostgreSQL; in-memory-identity-store.ts implements
 * it for tests and benchmarks.
 */
import type { BandKey } from './bands';
import type { SignatureCode } from './signature';

/** One provider file: the unit a mapping row (track_server_map) describes. */
export interface TrackFile {
  /** Registry id of the media server. */
  readonly serverId: string;
  /** The server's own id of the track. */
  readonly providerId: string;
  /** File path as the server reports it, or null when unknown (the folder veto then abstains). */
  readonly path: string | null;
}

/** The evidence the gates compare, for an incoming track or a stored song. */
export interface TrackEvidence {
  /** Raw 200-d embedding (for a stored song its signature is recomputed from it; the id's hex is not trusted). */
  readonly embedding: ArrayLike<number>;
  /** Duration in seconds, or null when unknown (unknown never passes the duration gate). */
  readonly durationSeconds: number | null;
  /** Raw Chromaprint fingerprint (fpcalc -raw items), or null. */
  readonly chromaprint: ArrayLike<number> | null;
  /** Provider files: the incoming file(s), or every file currently mapped to the stored song. */
  readonly files: readonly TrackFile[];
}

/** A stored song proposed as "maybe the same" by the signature lookup. */
export interface IdentityCandidate extends TrackEvidence {
  /** Its canonical id (fp_...). */
  readonly canonicalId: string;
}

/** A band lookup. */
export interface CandidateQuery {
  /** Signature of the incoming track. */
  readonly signature: SignatureCode;
  /** Keys to look up under `layoutId`: the exact band keys, plus probes when the layout has a probe radius (bands.ts probeKeys). */
  readonly bands: readonly BandKey[];
  /** Candidates farther than this many bits may be omitted by the source (the domain filters anyway). */
  readonly maxHamming: number;
  /** Band layout the keys were computed with; a source indexed with another layout must refuse. */
  readonly layoutId: string;
}

/**
 * Storage port of the identity decision.
 *
 * Concurrency requirement (the store's job): a decision is computed from a snapshot. Between the
 * lookup and the write another worker may insert the same content or claim the same new id. The store
 * must (1) enforce uniqueness of canonical ids (primary key) and (2) on a conflicting insert, re-run
 * the decision with fresh candidates rather than fail or overwrite; decide.ts resolveAndCommit is that
 * loop. Merges need no lock beyond the mapping row's own uniqueness; a merge target deleted
 * concurrently (orphan cleaning) must be reported as a conflict too.
 */
export interface IdentityCandidateSource {
  /**
   * Every stored song (with a valid signature) that shares at least one (band, value) key with the
   * query. May leave out songs whose Hamming distance exceeds query.maxHamming. Order is irrelevant.
   * @throws when the source's index uses another band layout than query.layoutId.
   */
  findBySignatureBands(query: CandidateQuery): Promise<IdentityCandidate[]>;
  /** The subset of `ids` already used by some stored song. */
  findTakenIds(ids: readonly string[]): Promise<ReadonlySet<string>>;
}
