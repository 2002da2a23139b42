/**
 * `@polyphony/catalogue-identity/identity`: the identity engine and its PostgreSQL store as a library,
 * for tools that measure them outside the service (the benchmarks in the top-level `bench/` workspace:
 * 1M-song identity, store throughput, the 500k sweep, the Chromaprint calibration). Product code only.
 *
 * - Signatures: `computeSignature` (200-bit code of an embedding), `hammingDistance`, `formatCanonicalId`.
 * - Band index: `bandLayoutForTolerance`, `bandCountForTolerance`, `balancedBandLayout`, `bandKeys`, `probeKeys`.
 * - Decisions: `IdentityResolver`, `mintCanonicalId`, `DEFAULT_IDENTITY_CONFIG`, the Chromaprint gate constants,
 *   `InMemoryIdentityStore` (the resolver's candidate source without a database), `planRelabel`.
 * - Storage: `PgIdentityRepository`, `PgCandidateSource`, and the column codecs `encodeVector`, `signatureParam`.
 * - `parseFpcalcRaw` (fpcalc -raw output to words).
 * - `BrowseRepository`: the browse queries of GET /internal/browse (the browse-1m benchmark times them).
 * Shapes, units and errors are documented on each export.
 */
export { computeSignature, formatCanonicalId, hammingDistance } from './domain/identity/signature';
export { balancedBandLayout, bandCountForTolerance, bandKeys, bandLayoutForTolerance, probeKeys, type BandLayout } from './domain/identity/bands';
export { CHROMAPRINT_MATCH_THRESHOLD, CHROMAPRINT_MAX_ALIGN_OFFSET, CHROMAPRINT_MIN_OVERLAP, DEFAULT_IDENTITY_CONFIG } from './domain/identity/constants';
export { IdentityResolver, mintCanonicalId } from './domain/identity/decide';
export { InMemoryIdentityStore } from './domain/identity/in-memory-identity-store';
export { planRelabel, type RelabelChunkPlan, type RelabelRow, type RelabelRowSource } from './domain/identity/relabel';
export { parseFpcalcRaw } from './domain/identity/chromaprint';
export { PgIdentityRepository, PgCandidateSource } from './store/identity.repository';
export { encodeVector, signatureParam } from './store/codec';
export { BrowseRepository } from './store/browse.repository';
