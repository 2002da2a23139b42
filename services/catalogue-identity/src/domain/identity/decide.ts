/**
 * The identity decision for one analysed track (spec "Content identity" 2-3, "Analysis across
 * servers" 2-4): the signature proposes candidates within the Hamming tolerance, the gates decide,
 * and the answer is either an existing canonical id (merge: add a mapping row) or a new id.
 *
 * New ids. The first choice is the signature id fp_<v><signature hex>. When that id is already used by
 * different audio (a signature collision the gates rejected), the next free id is taken by counting
 * up: signature + 1, + 2, ... as a 200-bit integer modulo 2^200 (see signature.ts nextCode). This is
 * deterministic for a given catalogue state, keeps every id in the fp_<digit><50 hex> shape, and is
 * unique because "free" is checked against the store (and enforced there by the primary key; see
 * resolveAndCommit for the race).
 */
import { BandLayout, assertBandLayout, bandLayoutForTolerance, probeKeys } from './bands';
import { IdentityConfig, identityConfigProblems } from './constants';
import { GateReport, evaluateGates } from './gates';
import type { IdentityCandidate, IdentityCandidateSource, TrackEvidence } from './identity-candidate-source';
import { asSchemeVersion } from './scheme';
import {
  SignatureCode,
  UnsignableReason,
  computeSignature,
  formatCanonicalId,
  hammingDistance,
  nextCode,
  unsignableCanonicalId,
} from './signature';

/** An analysed provider file to place in the catalogue. `files` must hold at least the file itself. */
export type IncomingTrack = TrackEvidence;

/** What happened to one candidate. */
export interface CandidateVerdict {
  readonly canonicalId: string;
  /** Hamming distance of the candidate's signature to the track's, or null when the candidate has none. */
  readonly hamming: number | null;
  /** Gate results; null when the candidate was dropped before the gates. */
  readonly gates: GateReport | null;
  /** Why it was dropped before the gates, if it was. */
  readonly dropped?: 'outside-tolerance' | 'unsignable-candidate';
}

/** The decision. */
export type IdentityDecision =
  | {
      readonly kind: 'merge';
      /** Existing song the track is a copy of. */
      readonly canonicalId: string;
      /** Track's signature (null for an unsignable track). */
      readonly signature: SignatureCode | null;
      /** 'gates': every gate agreed; 'same-unsignable-file': the unsignable id of this very file already exists. */
      readonly via: 'gates' | 'same-unsignable-file';
      readonly verdicts: readonly CandidateVerdict[];
    }
  | {
      readonly kind: 'new';
      /** Id to store the new song under. */
      readonly canonicalId: string;
      readonly signature: SignatureCode | null;
      readonly reason: 'no-candidate' | 'all-rejected' | 'unsignable';
      readonly unsignableReason?: UnsignableReason;
      /** How many taken ids were skipped to find a free one (0 = the signature id itself). */
      readonly collisions: number;
      readonly verdicts: readonly CandidateVerdict[];
    };

/** Result of {@link judgeCandidates}. */
export interface CandidateJudgement {
  /** The candidate every gate agreed on (nearest by cosine distance, then Hamming, then id), or null. */
  readonly chosen: IdentityCandidate | null;
  /** One verdict per distinct candidate, nearest signature first. */
  readonly verdicts: CandidateVerdict[];
}

/**
 * Pure core of the decision: which (if any) candidate is the same song as the track.
 * Candidates outside the Hamming tolerance or without a valid signature are dropped; the rest go
 * through every gate (gates.ts). Duplicate candidate ids are judged once.
 */
export function judgeCandidates(
  track: TrackEvidence,
  signature: SignatureCode,
  candidates: readonly IdentityCandidate[],
  config: IdentityConfig,
): CandidateJudgement {
  const seen = new Set<string>();
  const measured: { candidate: IdentityCandidate; hamming: number | null }[] = [];
  for (const candidate of candidates) {
    if (seen.has(candidate.canonicalId)) continue;
    seen.add(candidate.canonicalId);
    const sig = computeSignature(candidate.embedding);
    measured.push({ candidate, hamming: sig.ok ? hammingDistance(signature, sig.code) : null });
  }
  measured.sort(
    (x, y) =>
      (x.hamming ?? Number.MAX_SAFE_INTEGER) - (y.hamming ?? Number.MAX_SAFE_INTEGER) ||
      (x.candidate.canonicalId < y.candidate.canonicalId ? -1 : x.candidate.canonicalId > y.candidate.canonicalId ? 1 : 0),
  );
  const verdicts: CandidateVerdict[] = [];
  let chosen: IdentityCandidate | null = null;
  let chosenDistance = Infinity;
  for (const { candidate, hamming } of measured) {
    if (hamming === null) {
      verdicts.push({ canonicalId: candidate.canonicalId, hamming, gates: null, dropped: 'unsignable-candidate' });
      continue;
    }
    if (hamming > config.signatureMaxHamming) {
      verdicts.push({ canonicalId: candidate.canonicalId, hamming, gates: null, dropped: 'outside-tolerance' });
      continue;
    }
    const gates = evaluateGates(track, candidate, config);
    verdicts.push({ canonicalId: candidate.canonicalId, hamming, gates });
    // Strictly smaller distance wins; on ties the earlier one (smaller Hamming, then id) stays.
    if (gates.same && (gates.cosineDistance as number) < chosenDistance) {
      chosen = candidate;
      chosenDistance = gates.cosineDistance as number;
    }
  }
  return { chosen, verdicts };
}

/**
 * First free id for a signature: fp_<version><code>, else code + 1, + 2, ... (mod 2^200).
 * @param isTaken whether an id is already used.
 * @param maxAttempts ids tried before giving up (default 4096).
 * @returns the id and how many taken ids were skipped.
 * @throws Error when maxAttempts ids in a row are taken (a corrupted catalogue, not a real collision run).
 */
export function mintCanonicalId(
  version: number,
  code: SignatureCode,
  isTaken: (id: string) => boolean,
  maxAttempts = 4096,
): { id: string; collisions: number } {
  let c = code;
  for (let k = 0; k < maxAttempts; k++) {
    const id = formatCanonicalId(version, c);
    if (!isTaken(id)) return { id, collisions: k };
    c = nextCode(c);
  }
  throw new Error(`no free canonical id within ${maxAttempts} steps of ${formatCanonicalId(version, code)}`);
}

/**
 * {@link mintCanonicalId} against an asynchronous store: asks for `batch` consecutive ids at a time.
 */
export async function mintCanonicalIdAsync(
  version: number,
  code: SignatureCode,
  findTakenIds: (ids: readonly string[]) => Promise<ReadonlySet<string>>,
  batch = 8,
  maxAttempts = 4096,
): Promise<{ id: string; collisions: number }> {
  let c = code;
  for (let done = 0; done < maxAttempts; ) {
    const ids: string[] = [];
    for (let k = 0; k < batch && done + k < maxAttempts; k++) {
      ids.push(formatCanonicalId(version, c));
      c = nextCode(c);
    }
    const taken = await findTakenIds(ids);
    const free = ids.findIndex((id) => !taken.has(id));
    if (free >= 0) return { id: ids[free] as string, collisions: done + free };
    done += ids.length;
  }
  throw new Error(`no free canonical id within ${maxAttempts} steps of ${formatCanonicalId(version, code)}`);
}

/**
 * The decision against a store. Stateless apart from its configuration; safe to share.
 */
export class IdentityResolver {
  readonly config: IdentityConfig;
  readonly layout: BandLayout;
  private readonly version: number;

  /**
   * @param source candidate lookup and id-taken check.
   * @param config thresholds and scheme version.
   * @param layout band layout the source indexes with (default: strided, tolerance + 1 bands).
   * @throws RangeError for an invalid config or a layout with too few bands for the tolerance.
   */
  constructor(
    private readonly source: IdentityCandidateSource,
    config: IdentityConfig,
    layout?: BandLayout,
  ) {
    const problems = identityConfigProblems(config);
    if (problems.length > 0) throw new RangeError(`invalid identity config: ${problems.join('; ')}`);
    this.config = config;
    this.version = asSchemeVersion(config.schemeVersion);
    this.layout = layout ?? bandLayoutForTolerance(config.signatureMaxHamming);
    assertBandLayout(this.layout, config.signatureMaxHamming);
  }

  /**
   * Decides where a track belongs. Reads only; the caller writes the result (see resolveAndCommit).
   * @throws RangeError when the track has no file.
   */
  async resolve(track: IncomingTrack): Promise<IdentityDecision> {
    const file = track.files[0];
    if (!file) throw new RangeError('an incoming track needs its provider file');
    const sig = computeSignature(track.embedding);
    if (!sig.ok) {
      const id = unsignableCanonicalId(file.serverId, file.providerId);
      const taken = await this.source.findTakenIds([id]);
      if (taken.has(id)) return { kind: 'merge', canonicalId: id, signature: null, via: 'same-unsignable-file', verdicts: [] };
      return { kind: 'new', canonicalId: id, signature: null, reason: 'unsignable', unsignableReason: sig.reason, collisions: 0, verdicts: [] };
    }
    const candidates = await this.source.findBySignatureBands({
      signature: sig.code,
      bands: probeKeys(sig.code, this.layout),
      maxHamming: this.config.signatureMaxHamming,
      layoutId: this.layout.id,
    });
    const { chosen, verdicts } = judgeCandidates(track, sig.code, candidates, this.config);
    if (chosen) return { kind: 'merge', canonicalId: chosen.canonicalId, signature: sig.code, via: 'gates', verdicts };
    const { id, collisions } = await mintCanonicalIdAsync(this.version, sig.code, (ids) => this.source.findTakenIds(ids));
    const gated = verdicts.some((v) => v.gates !== null);
    return { kind: 'new', canonicalId: id, signature: sig.code, reason: gated ? 'all-rejected' : 'no-candidate', collisions, verdicts };
  }
}

/** Outcome of a store write of a decision. */
export type CommitOutcome = 'committed' | 'conflict';

/**
 * Resolve-then-write loop for concurrent workers. `commit` must write the decision atomically and
 * return 'conflict' (not throw) when the catalogue changed under it: the new id was inserted by
 * someone else (unique violation) or the merge target no longer exists. The decision is then
 * recomputed from fresh candidates, which now include the other worker's song.
 *
 * @returns the committed decision.
 * @throws Error after maxAttempts conflicts in a row.
 */
export async function resolveAndCommit(
  resolver: IdentityResolver,
  track: IncomingTrack,
  commit: (decision: IdentityDecision) => Promise<CommitOutcome>,
  maxAttempts = 5,
): Promise<IdentityDecision> {
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const decision = await resolver.resolve(track);
    if ((await commit(decision)) === 'committed') return decision;
  }
  throw new Error(`identity decision still conflicting after ${maxAttempts} attempts`);
}
