/**
 * Benchmark of the content-identity domain at catalogue scale.
 *
 *   lookup:  1,000,000 synthetic songs in the in-memory banded index (InMemoryIdentityStore); then
 *            20,000 resolves (band lookup + gates + id minting), half of them copies of stored songs
 *            from another server (must merge into the right id), half new songs (must not merge).
 *            Reports p50/p99 latency of the band lookup alone and of the whole decision, codes
 *            examined per lookup and the largest band bucket. Two synthetic distributions:
 *            'uniform' (iid N(0,1) embeddings: balanced, independent bits) and 'clustered' (shared
 *            offset + 64 genre centres + per-song noise: biased, correlated bits, closer to real
 *            embeddings and the case that blew up the reference's band blocking, issue #777).
 *            Layouts: the default (11 strided bands), multi-probe (7 bands, probe radius 1) and a
 *            balanced layout fitted to 5,000 sample codes, the last two on the clustered set only.
 *            Latency is given in wall time and in process CPU time (the build machine is shared).
 *   relabel: planRelabel over 300,000 legacy provider-keyed rows streamed from a generator source
 *            (rows are re-generated on demand, so the source holds nothing): 5 % copies of earlier
 *            rows on another server (merge), 3 % merged groups with a file of another length
 *            (fp_4 split), 0.1 % unsignable. Reports time, peak RSS and heap, then a second run over
 *            300,000 rows that already carry current ids (must plan nothing). Run with the default
 *            layout and with the multi-probe layout (the planner's index is private to it).
 *
 * Run: npm run build && node bench/dist/catalogue-identity/identity-1m.js [lookup|relabel]
 * Each mode runs in its own child process so memory figures do not mix.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { BandLayout, balancedBandLayout, bandCountForTolerance, bandLayoutForTolerance, probeKeys, DEFAULT_IDENTITY_CONFIG, IdentityResolver, mintCanonicalId, InMemoryIdentityStore, RelabelChunkPlan, RelabelRow, RelabelRowSource, planRelabel, computeSignature, formatCanonicalId, hammingDistance } from '@polyphony/catalogue-identity/identity';
import { mulberry32 } from '@polyphony/vectors';

const DIM = 200;

function fillGaussian(out: Float64Array, r: () => number, scale: number, add = false): void {
  for (let i = 0; i < out.length; i += 2) {
    const u = Math.max(r(), 1e-12);
    const rad = Math.sqrt(-2 * Math.log(u)) * scale;
    const th = 2 * Math.PI * r();
    out[i] = (add ? (out[i] as number) : 0) + rad * Math.cos(th);
    if (i + 1 < out.length) out[i + 1] = (add ? (out[i + 1] as number) : 0) + rad * Math.sin(th);
  }
}

/** Deterministic synthetic catalogue: song n is regenerated from n alone. */
class Synthetic {
  private readonly offset = new Float64Array(DIM);
  private readonly centres: Float64Array[];
  constructor(
    readonly kind: 'uniform' | 'clustered',
    seed = 12345,
  ) {
    const r = mulberry32(seed);
    const clustered = kind === 'clustered';
    if (clustered) fillGaussian(this.offset, r, 1.0);
    this.centres = Array.from({ length: 64 }, () => {
      const c = new Float64Array(DIM);
      if (clustered) fillGaussian(c, r, 0.8);
      return c;
    });
  }
  /** Embedding of song n. */
  song(n: number): Float64Array {
    const r = mulberry32(Math.imul(n + 1, 0x9e3779b1));
    const e = new Float64Array(DIM);
    if (this.kind === 'uniform') {
      fillGaussian(e, r, 1);
      return e;
    }
    const c = this.centres[Math.floor(r() * 64)] as Float64Array;
    fillGaussian(e, r, 0.6);
    for (let d = 0; d < DIM; d++) e[d] = (e[d] as number) + (this.offset[d] as number) + (c[d] as number);
    return e;
  }
  /** Duration of song n, seconds. */
  duration(n: number): number {
    return 90 + (Math.imul(n + 7, 2654435761) >>> 0) % 400 + ((n * 37) % 100) / 100;
  }
  /** A copy of song n as another encoding would embed it. */
  copy(n: number, seed: number): Float64Array {
    const e = this.song(n);
    const noise = new Float64Array(DIM);
    fillGaussian(noise, mulberry32(seed), this.kind === 'uniform' ? 0.02 : 0.012);
    for (let d = 0; d < DIM; d++) e[d] = (e[d] as number) + (noise[d] as number);
    return e;
  }
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * (sorted.length - 1)))] as number;
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MB`;
}

type LayoutChoice = 'strided' | 'probe' | 'balanced';

function cpuMs(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

async function lookupBench(kind: 'uniform' | 'clustered', layoutChoice: LayoutChoice): Promise<void> {
  const N = Number(process.env.IDENTITY_BENCH_SONGS ?? 1_000_000);
  const Q = 20_000;
  const config = DEFAULT_IDENTITY_CONFIG;
  const syn = new Synthetic(kind);
  let layout: BandLayout = bandLayoutForTolerance(config.signatureMaxHamming);
  if (layoutChoice === 'probe') layout = bandLayoutForTolerance(config.signatureMaxHamming, 1);
  if (layoutChoice === 'balanced') {
    const sample = Array.from({ length: 5000 }, (_, i) => {
      const s = computeSignature(syn.song(i * 199));
      if (!s.ok) throw new Error('unsignable sample');
      return s.code;
    });
    layout = balancedBandLayout(sample, bandCountForTolerance(config.signatureMaxHamming));
  }
  const store = new InMemoryIdentityStore(layout, N);
  const ids: string[] = new Array(N);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let n = 0; n < N; n++) {
    const e = syn.song(n);
    const sig = computeSignature(e);
    if (!sig.ok) throw new Error('synthetic song unsignable');
    const { id } = mintCanonicalId(4, sig.code, (x) => store.has(x));
    ids[n] = id;
    store.insertSong({ canonicalId: id, embedding: e, durationSeconds: syn.duration(n), files: [{ serverId: 'jf', providerId: `jf-${n}`, path: `/music/${n % 5000}/${n}.flac` }] });
  }
  const buildS = (performance.now() - t0) / 1000;
  const buildCpuS = cpuMs(c0) / 1000;
  const resolver = new IdentityResolver(store, config, layout);

  const lookupMs: number[] = [];
  const decideMs: number[] = [];
  const decideCpuMs: number[] = [];
  let copyMerged = 0;
  let copyWithin = 0;
  let copyWrong = 0;
  let newMerged = 0;
  let scannedTotal = 0;
  const r = mulberry32(99);
  for (let q = 0; q < Q; q++) {
    const isCopy = q % 2 === 0;
    const k = Math.floor(r() * N);
    const e = isCopy ? syn.copy(k, q + 1) : syn.song(N + q);
    const duration = isCopy ? syn.duration(k) + (r() - 0.5) * 0.8 : syn.duration(N + q);
    const t = { embedding: e, durationSeconds: duration, chromaprint: null, files: [{ serverId: 'nd', providerId: `nd-${q}`, path: `/n/${q}/x.flac` }] };
    const sig = computeSignature(e);
    if (!sig.ok) throw new Error('unsignable query');
    // Whole decision first (cold caches, the honest figure), then the band lookup alone.
    let s = performance.now();
    const c = process.cpuUsage();
    const d = await resolver.resolve(t);
    decideMs.push(performance.now() - s);
    decideCpuMs.push(cpuMs(c));
    const before = store.scanned;
    s = performance.now();
    await store.findBySignatureBands({ signature: sig.code, bands: probeKeys(sig.code, layout), maxHamming: config.signatureMaxHamming, layoutId: layout.id });
    lookupMs.push(performance.now() - s);
    scannedTotal += store.scanned - before;
    if (isCopy) {
      const orig = computeSignature(syn.song(k));
      if (orig.ok && hammingDistance(orig.code, sig.code) <= config.signatureMaxHamming) copyWithin++;
      if (d.kind === 'merge' && d.canonicalId === ids[k]) copyMerged++;
      else if (d.kind === 'merge') copyWrong++;
    } else if (d.kind === 'merge') newMerged++;
  }
  lookupMs.sort((a, b) => a - b);
  decideMs.sort((a, b) => a - b);
  decideCpuMs.sort((a, b) => a - b);
  const buckets = store.largestBandBuckets();
  const mem = process.memoryUsage();
  console.log(`lookup [${kind}, layout ${layout.id}${layout.probeRadius ? ` probe radius ${layout.probeRadius}` : ''}] ${N.toLocaleString('en')} songs, built in ${buildS.toFixed(1)} s wall / ${buildCpuS.toFixed(1)} s CPU; ${Q.toLocaleString('en')} queries (half copies, half new)`);
  console.log(`  band lookup only   p50 ${pct(lookupMs, 0.5).toFixed(3)} ms  p99 ${pct(lookupMs, 0.99).toFixed(3)} ms  max ${pct(lookupMs, 1).toFixed(2)} ms`);
  console.log(`  lookup + decision  p50 ${pct(decideMs, 0.5).toFixed(3)} ms  p99 ${pct(decideMs, 0.99).toFixed(3)} ms  max ${pct(decideMs, 1).toFixed(2)} ms (wall)`);
  console.log(`  lookup + decision  p50 ${pct(decideCpuMs, 0.5).toFixed(3)} ms  p99 ${pct(decideCpuMs, 0.99).toFixed(3)} ms (process CPU time, insensitive to other load)`);
  console.log(`  codes examined per lookup: mean ${(scannedTotal / Q).toFixed(1)}; largest band bucket per band: ${buckets.join(',')}`);
  console.log(`  copies: ${copyWithin}/${Q / 2} within ${config.signatureMaxHamming} bits, ${copyMerged} merged into the right id, ${copyWrong} into a wrong id; new songs merged: ${newMerged}/${Q / 2}`);
  console.log(`  memory: rss ${mb(mem.rss)}, heap ${mb(mem.heapUsed)}, array buffers ${mb(mem.arrayBuffers)}`);
}

/** Streams synthetic legacy rows; regenerates any row on demand. */
class SyntheticRelabelSource implements RelabelRowSource {
  peakRss = 0;
  constructor(
    private readonly syn: Synthetic,
    private readonly total: number,
    private readonly currentIds: boolean,
  ) {}

  /** Row n: 5 % copies of row n-1000 on another server, 3 % groups with a longer file, 0.1 % unsignable. */
  row(n: number): RelabelRow {
    const h = (Math.imul(n + 11, 2246822519) >>> 0) % 1000;
    const isCopy = h < 50 && n >= 1000;
    const base = isCopy ? n - 1000 : n;
    const unsignable = h >= 50 && h < 51;
    const embedding = unsignable ? new Float64Array(DIM).fill(0.1) : isCopy ? this.syn.copy(base, n) : this.syn.song(n);
    const duration = this.syn.duration(base) + (isCopy ? 0.3 : 0);
    const server = isCopy ? 'nd' : 'jf';
    const mappings = [{ serverId: server, providerId: `${server}-${n}`, path: `/music/${n % 5000}/${n}.flac`, durationSeconds: duration }];
    if (h >= 100 && h < 130) {
      mappings.push({ serverId: 'pl', providerId: `pl-${n}`, path: `/plex/${n}/a.flac`, durationSeconds: duration + 0.4 });
      mappings.push({ serverId: 'pl', providerId: `pl-live-${n}`, path: `/plex/live/${n}.flac`, durationSeconds: duration + 25 });
    }
    let oldId = `${server}-${n}`;
    if (this.currentIds) {
      const sig = computeSignature(embedding);
      oldId = sig.ok ? formatCanonicalId(4, sig.code) : `fp_0${n.toString(16).padStart(50, '0')}`;
    }
    return { oldId, embedding, durationSeconds: duration, chromaprint: null, filePath: mappings[0]?.path ?? null, mappings };
  }

  async *scan(request: { selection: 'current' | 'legacy'; chunkSize: number }): AsyncIterable<readonly RelabelRow[]> {
    // A store would filter by id prefix; this source knows which kind it holds.
    if ((request.selection === 'current') !== this.currentIds) return;
    for (let start = 0; start < this.total; start += request.chunkSize) {
      const chunk: RelabelRow[] = [];
      for (let n = start; n < Math.min(this.total, start + request.chunkSize); n++) {
        const row = this.row(n);
        // Copies in "current" mode duplicate their base's id; a real catalogue would not hold those.
        if (this.currentIds && row.mappings[0]?.serverId === 'nd') continue;
        chunk.push(row);
      }
      this.peakRss = Math.max(this.peakRss, process.memoryUsage.rss());
      yield chunk;
    }
  }

  async loadRows(oldIds: readonly string[]): Promise<readonly RelabelRow[]> {
    return oldIds.map((id) => {
      const n = Number(id.slice(3));
      if (this.currentIds || !Number.isInteger(n)) throw new Error(`bench source cannot load ${id}`);
      return this.row(n);
    });
  }
}

async function relabelBench(layoutChoice: 'strided' | 'probe'): Promise<void> {
  const N = Number(process.env.IDENTITY_BENCH_ROWS ?? 300_000);
  const syn = new Synthetic('clustered');
  global.gc?.();
  const base = process.memoryUsage();
  const source = new SyntheticRelabelSource(syn, N, false);
  let relabels = 0;
  let merges = 0;
  let detached = 0;
  let chunks = 0;
  const sink = async (plan: RelabelChunkPlan): Promise<void> => {
    chunks++;
    relabels += plan.relabels.length;
    merges += plan.relabels.filter((x) => x.kind === 'merge').length;
    detached += plan.detached.length;
  };
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  // The planner's index is private to it, so it may use a multi-probe layout whatever the store indexes with.
  const layout = bandLayoutForTolerance(DEFAULT_IDENTITY_CONFIG.signatureMaxHamming, layoutChoice === 'probe' ? 1 : 0);
  const summary = await planRelabel(source, DEFAULT_IDENTITY_CONFIG, sink, { chunkSize: 5000, layout, expectedRows: N });
  const seconds = (performance.now() - t0) / 1000;
  const after = process.memoryUsage();
  const maxRssKb = process.resourceUsage().maxRSS;
  console.log(`relabel: ${N.toLocaleString('en')} legacy rows (clustered synthetic), layout ${layout.id}${layout.probeRadius ? ` probe radius ${layout.probeRadius}` : ''}, chunks of 5000, ${seconds.toFixed(1)} s wall / ${(cpuMs(c0) / 1000).toFixed(1)} s CPU (${((N / seconds) | 0).toLocaleString('en')} rows/s wall)`);
  console.log(`  planned: ${summary.relabelled} relabelled, ${summary.merged} merged (expected ~${Math.round((N - 1000) * 0.05)}), ${summary.unsignable} unsignable, ${summary.detachedMappings} mappings split off; ${chunks} chunk plans, ${relabels} entries`);
  console.log(`  work: ${summary.scannedCodes.toLocaleString('en')} codes examined (${(summary.scannedCodes / N).toFixed(1)}/row), ${summary.gateChecks} gate checks, ${summary.loadedRows} rows re-read, ${summary.collisions} id collisions`);
  console.log(`  memory: baseline rss ${mb(base.rss)}; peak rss ${mb(maxRssKb * 1024)} (sampled during scan ${mb(source.peakRss)}); heap ${mb(base.heapUsed)} -> ${mb(after.heapUsed)}, array buffers ${mb(base.arrayBuffers)} -> ${mb(after.arrayBuffers)}`);
  if (merges !== summary.merged || detached !== summary.detachedMappings) throw new Error('sink and summary disagree');

  const again = new SyntheticRelabelSource(syn, N, true);
  let plans = 0;
  const t1 = performance.now();
  const second = await planRelabel(again, DEFAULT_IDENTITY_CONFIG, async () => void plans++, { chunkSize: 5000, layout, expectedRows: N });
  console.log(`  second run over ${second.currentRows.toLocaleString('en')} current rows: ${((performance.now() - t1) / 1000).toFixed(1)} s, ${plans} plans, ${second.legacyRows} legacy rows`);
}

async function main(): Promise<void> {
  const mode = process.argv[2];
  if (mode === 'lookup-uniform') return lookupBench('uniform', 'strided');
  if (mode === 'lookup-clustered') return lookupBench('clustered', 'strided');
  if (mode === 'lookup-clustered-probe') return lookupBench('clustered', 'probe');
  if (mode === 'lookup-clustered-balanced') return lookupBench('clustered', 'balanced');
  if (mode === 'relabel-child') return relabelBench('strided');
  if (mode === 'relabel-child-probe') return relabelBench('probe');
  const lookups = ['lookup-uniform', 'lookup-clustered', 'lookup-clustered-probe', 'lookup-clustered-balanced'];
  const modes = mode === 'lookup' ? lookups : mode === 'relabel' ? ['relabel-child', 'relabel-child-probe'] : [...lookups, 'relabel-child', 'relabel-child-probe'];
  for (const m of modes) {
    const child = spawnSync(process.execPath, ['--expose-gc', __filename, m], { stdio: 'inherit', env: process.env });
    if (child.status !== 0) throw new Error(`${m} failed with status ${child.status}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
