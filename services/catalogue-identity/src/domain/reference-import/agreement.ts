/**
 * Agreement of imported reference vectors with polyphony's own computation of the same layer (issue 34; report field
 * `vector_agreement`, contract VectorAgreement in shared/contracts/src/import.ts). The analysis worker computes the
 * reference's vector of a file (POST /internal/analysis/reference-vector: MSD `model/dense/BiasAdd`, mean over every
 * 3 s patch of a center=False mel of the first 600 s); this module picks the sample and summarises the cosines.
 */
import type { VectorAgreement } from '@polyphony/contracts';
import type { PlanSong } from './plan';
import { cosineSimilarity as cosine } from '@polyphony/vectors';

/** Songs compared per import. Each costs one download, one decode and one MSD pass per 3 s of audio (up to 200). */
export const AGREEMENT_SAMPLE = 5;
/**
 * Cosine at or above which a song's vectors agree. Measured: polyphony's float computation against the numpy oracle
 * of the same layer, cosine 1.0000000 (reference-vector.int.test.ts); what remains between polyphony and the
 * reference is the resampler (soxr_hq vs ffmpeg), ONNX exports and, where chosen, polyphony's int8 timbral
 * convolutions (penultimate cosine distance median 5.9e-3 on MTT, docs/musicnn.md). A vector of another layer (the
 * BN(ReLU(dense)) one) scores 0.69-0.79 on Wesnoth tracks, far below.
 */
export const AGREEMENT_THRESHOLD = 0.98;

/** One song to compare: its reference id and vector, and one file of it on a polyphony server. */
export interface AgreementCandidate {
  refItemId: string;
  vector: Float32Array;
  serverId: string;
  providerId: string;
}

/**
 * Up to `n` songs spread evenly over the plan's songs ordered by reference id (deterministic), each with its first file
 * on a server polyphony holds (`servers`: reference server id -> polyphony id); songs without one are left out.
 */
export function agreementSample(songs: readonly PlanSong[], servers: Readonly<Record<string, string>>, n = AGREEMENT_SAMPLE): AgreementCandidate[] {
  const eligible = songs
    .map((s) => {
      const file = s.files.find((f) => servers[f.refServerId] !== undefined);
      return file ? { refItemId: s.refItemId, vector: s.vector, serverId: servers[file.refServerId]!, providerId: file.providerId } : undefined;
    })
    .filter((c): c is AgreementCandidate => c !== undefined)
    .sort((a, b) => (a.refItemId < b.refItemId ? -1 : a.refItemId > b.refItemId ? 1 : 0));
  if (eligible.length <= n) return eligible;
  return Array.from({ length: n }, (_, i) => eligible[Math.floor((i * eligible.length) / n)]!);
}

/** Cosine similarity of `@polyphony/vectors` (0 for a zero vector, RangeError on different lengths), named as the report names it. */
export { cosineSimilarity as cosine } from '@polyphony/vectors';

/** What the analysis worker answered for one candidate: its vector, or why it could not compute one. */
export type AgreementAnswer = { vector: ArrayLike<number>; patches: number; precision: string } | { error: string };

/**
 * The report of a sample: per compared song its cosine, the failures with their reasons, how many agree, min and median.
 * `unavailable` (with the first failure's reason, or `no imported song has a file on a polyphony server`) when none compared.
 */
export function summariseAgreement(candidates: readonly AgreementCandidate[], answers: readonly AgreementAnswer[], threshold = AGREEMENT_THRESHOLD): VectorAgreement {
  const songs: VectorAgreement['songs'] = [];
  const failed: VectorAgreement['failed'] = [];
  let precision: string | undefined;
  candidates.forEach((c, i) => {
    const a = answers[i];
    if (!a || 'error' in a) failed.push({ ref_item_id: c.refItemId, reason: a ? a.error : 'not asked' });
    else {
      precision = a.precision;
      songs.push({ ref_item_id: c.refItemId, server_id: c.serverId, provider_id: c.providerId, cosine: Math.round(cosine(c.vector, a.vector) * 1e6) / 1e6, patches: a.patches });
    }
  });
  const sorted = songs.map((s) => s.cosine).sort((x, y) => x - y);
  const median = sorted.length === 0 ? null : sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  const base = { sampled: candidates.length, threshold, songs, failed, agreeing: sorted.filter((x) => x >= threshold).length, min_cosine: sorted[0] ?? null, median_cosine: median, ...(precision ? { precision } : {}) };
  if (songs.length > 0) return { status: 'measured', ...base };
  return { status: 'unavailable', reason: failed[0]?.reason ?? 'no imported song has a file on a polyphony server', ...base };
}
