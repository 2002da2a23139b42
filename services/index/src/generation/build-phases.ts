import { cellsOfCodes, encodeIndexCodes, quantiseIndex, quantiseKeepingCodes, type CooperativeScheduler, type IvfIndex } from '@polyphony/vector-engine';
import { ArtistModel } from '../artists/artist-model';
import type { ArtistLinkCounter, ArtistLinks, MapMethod } from '../core/generation';
import { VECTOR_DIM } from '../core/track.repository';
import { encodeBasis, fitPca, projectAll, type PcaBasis } from '../maps/projection';
import { umapLayout } from '../maps/umap-projection';
import type { BuildRows } from './build-rows';
import type { BuildReuse } from './build-reuse';
import type { BuildHost } from './build-types';
import { residentBytesOf, storedQuantiser } from './vector-storage';

/* Phases 3 and 4 of one index build (build-run.ts): the map, the artists and the quantisation of the built index. */

/** What the phases use of their build. */
export interface PhaseContext {
  host: BuildHost;
  generation: number;
  scheduler: CooperativeScheduler;
  reuse: BuildReuse;
  /** The build's embedder version (undefined: no rows). */
  version: string | undefined;
  /** Tracks a write of the generation's stored parts that runs in the background (awaited before the activation). */
  store: (write: Promise<unknown>) => void;
}

/**
 * Phase 3a, map: the serving generation's basis and map when the build may keep them (`BuildReuse.map`), else the PCA
 * basis is fitted (artist mixture prior) and the map is UMAP from UMAP_MIN_SAMPLES rows on, else the PCA projection.
 * Stored with the generation (`index.map_projections`, `index.builds.pca`).
 */
export async function layOutMap(c: PhaseContext, index: IvfIndex): Promise<{ pca: PcaBasis | undefined; coords: Float32Array; mapMethod: MapMethod }> {
  const g = c.host.generations;
  const kept = await c.reuse.map(index, c.version, c.scheduler);
  if (kept) {
    await g.saveProjection(c.generation, kept.coords, encodeBasis(kept.pca), kept.mapMethod);
    return kept;
  }
  const pca = await fitPca(index, c.scheduler);
  await c.host.progress(76, 'laying out the map');
  const umap = await umapLayout(index, c.scheduler);
  const mapMethod: MapMethod = umap ? 'umap' : 'pca';
  const coords = umap ?? (pca ? await projectAll(index, pca, c.scheduler) : new Float32Array(0));
  await g.saveProjection(c.generation, coords, pca ? encodeBasis(pca) : null, mapMethod);
  return { pca, coords, mapMethod };
}

/**
 * Phase 3b, artists: every artist's mixture (prior from the PCA variance; unchanged artists keep theirs when the
 * serving generation's basis was kept) and the provider artist links (majority of `counts`), stored.
 */
export async function fitArtists(c: PhaseContext, index: IvfIndex, pca: PcaBasis | undefined, rows: BuildRows, counts: ArtistLinkCounter): Promise<{ artists: ArtistModel; links: ArtistLinks }> {
  const h = c.host;
  await h.progress(82, 'fitting artist mixtures');
  const { keep, artistsFitted } = c.reuse.artists();
  const artists = pca ? await ArtistModel.fit(index, rows.artistOfRow(), rows.artistKeys, rows.artistNames, pca.variance, c.scheduler, h.vectors.dir, h.vectors.buildWorkers, undefined, keep) : ArtistModel.empty(VECTOR_DIM, index.size);
  artistsFitted(artists.count);
  // Records are read back from the model's mixture file one batch at a time, in the background (BackgroundStores).
  c.store(
    h.generations.saveArtists(c.generation, (function* () {
      for (let a = 0; a < artists.count; a++) yield artists.record(a);
    })()),
  );
  const links = counts.finish();
  c.store(h.generations.saveLinks(c.generation, [...links.entries()])); // a copy: the served links may change meanwhile
  return { artists, links };
}

/** Phase 4, quantisation (int8 / pq modes): the float generation is re-packed and dropped; codes are stored. */
export async function quantise(c: PhaseContext, index: IvfIndex): Promise<IvfIndex> {
  const v = c.host.vectors;
  if (v.mode === 'float') return index;
  const generations = c.host.generations;
  await c.host.progress(90, `quantising the vectors (${v.mode})`);
  const mode = v.mode as 'int8' | 'pq';
  const options = { mode, pqM: v.pqM, scheduler: c.scheduler, workers: v.buildWorkers, residentMaxBytes: residentBytesOf(v), ...(v.rerank ? { rerank: v.rerank } : {}), ...(v.dir ? { dir: v.dir } : {}) };
  // On kept cells, the serving generation's quantiser and the codes of unchanged rows are kept (generation/reuse.ts).
  const keep = c.reuse.keptCodes(mode, v.pqM);
  const kept = keep ? await quantiseKeepingCodes(index, keep, options) : undefined;
  if (kept && c.reuse.report) c.reuse.report.codesEncoded = kept.encoded;
  const served = kept?.index ?? (await quantiseIndex(index, options));
  // Stored with the generation: other replicas load the codes instead of training and encoding again.
  const parts = served.parts();
  const qz = parts.quantised!.quantiser;
  // In the background (the codes are views of the served index's code array, which nothing writes after this).
  c.store(generations.saveQuantised(c.generation, storedQuantiser(qz), cellsOfCodes(parts.cellOffsets, parts.quantised!.codes, qz.codeSize)));
  if (v.mode === 'pq') {
    // The int8 codes too (one pass over the float cells, ~1 s of CPU per 100k rows, encoded cell by cell into
    // the INSERTs): an int8 replica of this generation restores without encoding. An int8 build stores no PQ
    // codes (PQ encoding costs ~85x more); a PQ replica of such a generation trains and encodes its own.
    const int8 = await encodeIndexCodes(index, { mode: 'int8', scheduler: c.scheduler });
    await generations.saveQuantised(c.generation, storedQuantiser(int8.quantiser), int8.cells);
  }
  return served;
}
