import { MSD_GENRES, OTHER_FEATURE_LABELS, parseLabelScores, type HyperbolicTreeResponse } from '@polyphony/contracts';
import { ValidationError } from '@polyphony/platform';
import type { AvailabilityMask } from '@polyphony/vector-engine';
import { kmeans } from '@polyphony/vectors';
import type { Generation } from '../core/generation';
import type { RequestScope } from '../core/scope';
import { ballPoint, ballRadius, type PoincareBall } from './ball';
import { logMap0 } from './poincare';

/* The browsable tree of /api/hyperbolic/tree (hyperbolic.service.ts `tree`): moods -> genres -> clusters of the ball -> songs. */

/** Songs per cluster the tree aims at (k = ceil(songs / TREE_CLUSTER_SIZE), at most TREE_MAX_CLUSTERS). */
export const TREE_CLUSTER_SIZE = 25;
export const TREE_MAX_CLUSTERS = 12;
/** Tracks listed under one cluster node (the most generic first); `children_count` still counts them all. */
export const TREE_MAX_TRACKS = 200;

/** One cluster of the tree: rows sorted by radius (most generic first). */
export interface TreeCluster {
  rows: number[];
  meanRadius: number;
}
/** The tree of one server over one generation: mood -> genre -> clusters. */
export interface Tree {
  gen: Generation;
  mask: AvailabilityMask;
  moods: Map<string, Map<string, TreeCluster[]>>;
}

/** The first genre (MSD_GENRES) of a `mood_vector` (`label:prob,...`, strongest first), or null. */
export function topGenreOf(moodVector: string | null | undefined): string | null {
  if (!moodVector) return null;
  for (const [label] of parseLabelScores(moodVector) ?? []) if (MSD_GENRES.includes(label)) return label;
  return null;
}

/** The strongest of the six `other_features` (OTHER_FEATURE_LABELS), or null without them. */
export function topMoodOf(otherFeatures: string | null | undefined): string | null {
  let best: string | null = null;
  let bestP = -1;
  for (const [label, p] of parseLabelScores(otherFeatures ?? '') ?? []) {
    if ((OTHER_FEATURE_LABELS as readonly string[]).includes(label) && p > bestP) [best, bestP] = [label, p];
  }
  return best;
}

/** Rounds to 6 decimals (every float of the hyperbolic answers). */
export const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * The tree of the scope's server over `ball` (its generation): the available songs with a provider id and metadata,
 * grouped by mood (`topMoodOf`, "untagged") and genre (`topGenreOf`, "no genre"), each group split by `clusterRows`.
 */
export async function buildTree(scope: RequestScope, ball: PoincareBall): Promise<Tree> {
  const mask = scope.maskNow();
  const groups = new Map<string, Map<string, number[]>>();
  mask.forEachRow((row) => {
    if (!scope.gen.maps.providerOf(scope.serverId, row)) return;
    const m = scope.metaAt(row);
    if (!m) return;
    const mood = topMoodOf(m.otherFeatures) ?? 'untagged';
    const genre = topGenreOf(m.moodVector) ?? 'no genre';
    let g = groups.get(mood);
    if (!g) groups.set(mood, (g = new Map()));
    let rows = g.get(genre);
    if (!rows) g.set(genre, (rows = []));
    rows.push(row);
  });
  const moods = new Map<string, Map<string, TreeCluster[]>>();
  for (const [mood, g] of groups) {
    const out = new Map<string, TreeCluster[]>();
    for (const [genre, rows] of g) out.set(genre, await clusterRows(ball, rows));
    moods.set(mood, out);
  }
  return { gen: scope.gen, mask, moods };
}

/**
 * One node of the browsable tree of the selected server's songs: `root` -> moods (the strongest of the six
 * other_features; "untagged" without) -> genres (the first MSD_GENRES tag of mood_vector; "no genre") -> clusters
 * (k-means, k = ceil(songs / TREE_CLUSTER_SIZE) up to TREE_MAX_CLUSTERS, on the songs' tangent vectors at the
 * origin log₀(p), ordered centre first by mean radius) -> songs (most generic first, at most TREE_MAX_TRACKS
 * listed). Folders are ordered by song count (moods, genres) or radius (clusters). Built once per server and
 * generation (and again when the server's availability changes).
 * @throws ValidationError (400) for an unknown or malformed node_id
 */
export function treeNode(scope: RequestScope, ball: PoincareBall, tree: Tree, nodeId: string): HyperbolicTreeResponse {
  const unknown = () => new ValidationError(`Unknown node_id '${nodeId}': open 'root' and follow the ids of its items`);
  let parts: string[];
  try {
    parts = nodeId.split(':').map((p) => decodeURIComponent(p));
  } catch {
    throw unknown(); // a malformed %-escape
  }
  const mean = (xs: number[]) => (xs.length ? xs.reduce((s, v) => s + v, 0) / xs.length : 0);
  const folder = (id: string, name: string, rows: number[]) => ({ id, name, type: 'folder' as const, children_count: rows.length, hyperbolic_radius: round6(mean(rows.map((r) => ballRadius(ball, r)))) });
  const enc = (...xs: string[]) => xs.map(encodeURIComponent).join(':');
  const genreRows = (g: Map<string, TreeCluster[]>) => [...g.values()].flatMap((cs) => cs.flatMap((c) => c.rows));
  const [kind, mood, genre, cluster] = parts;
  if (kind === 'root' && parts.length === 1) {
    const items = [...tree.moods].map(([m, g]) => folder(enc('mood', m), m, genreRows(g))).sort((x, y) => y.children_count - x.children_count || x.name.localeCompare(y.name));
    return { node: { id: 'root', name: 'All songs', type: 'folder', children_count: items.reduce((s, i) => s + i.children_count, 0), parent_id: null, items } };
  }
  const genres = mood !== undefined ? tree.moods.get(mood) : undefined;
  if (kind === 'mood' && parts.length === 2 && genres) {
    const items = [...genres].map(([g, cs]) => folder(enc('genre', mood!, g), g, cs.flatMap((c) => c.rows))).sort((x, y) => y.children_count - x.children_count || x.name.localeCompare(y.name));
    return { node: { id: nodeId, name: mood!, type: 'folder', children_count: genreRows(genres).length, parent_id: 'root', items } };
  }
  const clusters = genre !== undefined ? genres?.get(genre) : undefined;
  if (kind === 'genre' && parts.length === 3 && clusters) {
    const items = clusters.map((c, i) => folder(enc('cluster', mood!, genre!, String(i)), `${genre} ${i + 1} (radius ${c.meanRadius.toFixed(2)})`, c.rows));
    return { node: { id: nodeId, name: `${mood} / ${genre}`, type: 'folder', children_count: items.reduce((s, i) => s + i.children_count, 0), parent_id: enc('mood', mood!), items } };
  }
  const c = cluster !== undefined && /^\d{1,3}$/.test(cluster) ? clusters?.[Number(cluster)] : undefined;
  if (kind === 'cluster' && parts.length === 4 && c) {
    const items: HyperbolicTreeResponse['node']['items'] = [];
    for (const row of c.rows) {
      if (items.length >= TREE_MAX_TRACKS) break;
      const provider = scope.gen.maps.providerOf(scope.serverId, row);
      const m = provider ? scope.metaAt(row) : undefined;
      if (!provider || !m) continue;
      items.push({ id: provider, name: m.title ?? provider, type: 'track', children_count: 0, hyperbolic_radius: round6(ballRadius(ball, row)), author: m.artist, album: m.album });
    }
    return { node: { id: nodeId, name: `${genre} ${Number(cluster) + 1}`, type: 'folder', children_count: c.rows.length, parent_id: enc('genre', mood!, genre!), items } };
  }
  throw unknown();
}

/** Splits rows into clusters (see `tree`); each cluster's rows by radius, clusters by mean radius. */
export async function clusterRows(ball: PoincareBall, rows: number[]): Promise<TreeCluster[]> {
  // The rows' radii once (a compact ball computes them on demand), not in every comparison of the sorts.
  const radius = new Map<number, number>();
  for (const row of rows) radius.set(row, ballRadius(ball, row));
  const byRadius = (xs: number[]) => xs.sort((x, y) => radius.get(x)! - radius.get(y)! || x - y);
  const k = Math.min(TREE_MAX_CLUSTERS, Math.ceil(rows.length / TREE_CLUSTER_SIZE));
  const meanR = (xs: number[]) => xs.reduce((s, r) => s + radius.get(r)!, 0) / Math.max(1, xs.length);
  if (k <= 1) return [{ rows: byRadius(rows), meanRadius: meanR(rows) }];
  const d = ball.dim;
  const tangent = new Float32Array(rows.length * d);
  rows.forEach((row, i) => tangent.set(logMap0(ballPoint(ball, row)), i * d));
  const res = await kmeans(tangent, rows.length, d, { k, seed: 0x68797065, restarts: 1, maxIterations: 25 });
  const groups: number[][] = Array.from({ length: k }, () => []);
  rows.forEach((row, i) => groups[res.assignments[i]!]!.push(row));
  return groups
    .filter((g) => g.length > 0)
    .map((g) => ({ rows: byRadius(g), meanRadius: meanR(g) }))
    .sort((x, y) => x.meanRadius - y.meanRadius || x.rows[0]! - y.rows[0]!);
}
