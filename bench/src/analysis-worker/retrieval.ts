/**
 * Retrieval benchmark: do nearest neighbours under cosine distance come from the same soundtrack?
 *
 * For every query track whose group has at least 6 tracks, the 5 nearest OTHER tracks of the whole corpus
 * (all groups, including the small ones as distractors) are taken by cosine distance (ties by name); precision@5
 * is the fraction of them from the query's group, averaged over queries (macro average over groups printed too).
 * Variants:
 *   (a) baseline: mean and std of the 64 log-mel bands (dB), raw; (a') the same, z-scored over the corpus;
 *   (b) dsp-v1 raw descriptor, un-normalised; (c) the DefaultEmbedder with the committed constants;
 *   (d) the DefaultEmbedder with constants re-derived without the query's group (leave-one-group-out), which
 *       shows the score does not depend on having seen the group when the constants were made.
 * Chance level: mean over queries of (group size - 1) / (N - 1).
 *
 * Run: npm run build && node bench/dist/analysis-worker/retrieval.js
 */
import { DSP_V1_DIMENSIONS, DefaultEmbedder, computeNormalisation, DSP_V1_NORMALISATION } from '@polyphony/analysis-worker/engine';
import { cosineDistance } from '@polyphony/vectors';
import { loadCorpus } from './corpus';
import { corpusFeatures, TrackFeatures } from './feature-cache';

const K = 5;
const MIN_GROUP = 6;

/** precision@K per query; `vectorsFor(queryIndex)` may give query-specific vectors (leave-one-group-out). */
export function precisionAtK(
  tracks: ReadonlyArray<{ name: string; group: string }>,
  vectorsFor: (query: number) => ReadonlyArray<ArrayLike<number>>,
  k = K,
  minGroup = MIN_GROUP,
): { mean: number; byGroup: Map<string, number>; queries: number } {
  const sizes = new Map<string, number>();
  for (const t of tracks) sizes.set(t.group, (sizes.get(t.group) ?? 0) + 1);
  const perGroup = new Map<string, number[]>();
  let total = 0;
  let queries = 0;
  for (let q = 0; q < tracks.length; q++) {
    const group = tracks[q]!.group;
    if ((sizes.get(group) ?? 0) < minGroup) continue;
    const vectors = vectorsFor(q);
    const ranked = tracks
      .map((t, i) => ({ i, name: t.name, d: i === q ? Infinity : cosineDistance(vectors[q]!, vectors[i]!) }))
      .filter((x) => x.i !== q)
      .sort((a, b) => a.d - b.d || (a.name < b.name ? -1 : 1))
      .slice(0, k);
    const p = ranked.filter((x) => tracks[x.i]!.group === group).length / k;
    total += p;
    queries++;
    const list = perGroup.get(group) ?? [];
    list.push(p);
    perGroup.set(group, list);
  }
  const byGroup = new Map<string, number>();
  for (const [g, list] of perGroup) byGroup.set(g, list.reduce((a, b) => a + b, 0) / list.length);
  return { mean: total / queries, byGroup, queries };
}

function zscore(vectors: number[][]): number[][] {
  const dims = vectors[0]!.length;
  const { mean, std } = computeNormalisation(vectors, dims);
  return vectors.map((v) => v.map((x, i) => (x - mean[i]!) / std[i]!));
}

function line(label: string, r: ReturnType<typeof precisionAtK>): string {
  const groups = [...r.byGroup.entries()].map(([g, p]) => `${g} ${p.toFixed(2)}`).join(', ');
  return `${label.padEnd(44)} P@${K} = ${r.mean.toFixed(3)}   (${groups})`;
}

async function main(): Promise<void> {
  const tracks = loadCorpus();
  const features: TrackFeatures[] = await corpusFeatures(tracks, (l) => process.stderr.write(`${l}\n`));
  const sizes = new Map<string, number>();
  for (const f of features) sizes.set(f.group, (sizes.get(f.group) ?? 0) + 1);
  const qs = features.filter((f) => (sizes.get(f.group) ?? 0) >= MIN_GROUP);
  const chance = qs.reduce((a, f) => a + ((sizes.get(f.group) ?? 1) - 1) / (features.length - 1), 0) / qs.length;
  process.stdout.write(`corpus: ${features.length} tracks, ${[...sizes.entries()].map(([g, n]) => `${g} ${n}`).join(', ')}; ${qs.length} queries\n`);
  process.stdout.write(`chance level P@${K} = ${chance.toFixed(3)}\n`);

  const baseline = features.map((f) => f.melStats);
  process.stdout.write(line('(a)  baseline mel-band mean/std, raw', precisionAtK(features, () => baseline)) + '\n');
  const baselineZ = zscore(baseline);
  process.stdout.write(line("(a') baseline mel-band mean/std, z-scored", precisionAtK(features, () => baselineZ)) + '\n');
  const raw = features.map((f) => f.raw);
  process.stdout.write(line('(b)  dsp-v1 raw descriptor, un-normalised', precisionAtK(features, () => raw)) + '\n');

  const embedder = new DefaultEmbedder();
  const embedded = features.map((f) => embedder.normalise(Float64Array.from(f.raw)));
  process.stdout.write(line(`(c)  DefaultEmbedder ${embedder.version} (${DSP_V1_NORMALISATION.tracks} tr.)`, precisionAtK(features, () => embedded)) + '\n');

  const logo = new Map<string, Float32Array[]>();
  for (const g of sizes.keys()) {
    const rest = features.filter((f) => f.group !== g).map((f) => f.raw);
    const { mean, std } = computeNormalisation(rest, DSP_V1_DIMENSIONS);
    const e = new DefaultEmbedder({ version: 'dsp-v1-logo', derivedFrom: `without ${g}`, tracks: rest.length, mean, std, weight: DSP_V1_NORMALISATION.weight });
    logo.set(g, features.map((f) => e.normalise(Float64Array.from(f.raw))));
  }
  process.stdout.write(line('(d)  DefaultEmbedder, leave-one-group-out', precisionAtK(features, (q) => logo.get(features[q]!.group)!)) + '\n');
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
