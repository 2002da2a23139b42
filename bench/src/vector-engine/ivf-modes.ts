/**
 * Memory / recall / latency of the IVF index per vector mode (float, int8, pq) at catalogue scale, with the
 * brute-force ratio and the physical floor in the same run (issue 19 "Bounded memory").
 *
 *   npx tsc -b bench
 *   node bench/dist/vector-engine/ivf-modes.js [N=1000000] [queries=200] [modes=float,int8,pq] [workers=2]
 *
 * Parent process: builds one generation over N synthetic 200-d vectors (SyntheticMixture, as ivf-1m.ts),
 * with `workers` worker threads, reports the build time, writes the stored cells to a dump file (what the
 * database holds), and computes the exact top-10 of `queries` stored songs by brute force (ground truth).
 * The parent quantises the float generation once per quantised mode (`quantiseIndex` in the worker threads, as
 * the building replica does; time printed) and dumps the codes (what `index.cell_codes` holds).
 * Then, for every mode, a **fresh child process** restores the generation from the dump the way a replica
 * does at start (float: `IvfIndex.restore`; int8/pq: `restoreQuantised` with the stored codes, bounded memory) and reports:
 *  - load time (restore = what a replica spends before it can switch to a new generation), RSS after load
 *    (VmRSS, after a GC) and the child's peak RSS (VmHWM);
 *  - recall@10 and latency p50/p99 of similar-songs queries (searchByRow, default nprobe and short list),
 *    k = 10 and k = 199; a 1% availability mask (k exact results?) and a 50% mask;
 *  - brute force in the same process (exact scan: in memory for float, from the disk copy for int8/pq) and
 *    its ratio to the IVF p50;
 *  - the physical floor: time to copy the bytes the query reads (the probed cells' vectors or codes) with
 *    one memcpy per cell, i.e. the memory traffic alone, without arithmetic.
 * Machine conditions (load average, cores) are printed with the figures: the machine is shared.
 */
import { execFileSync, fork } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, readSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AvailabilityMask, buildIvfIndex, type VectorBatch, IvfIndex, type Neighbour, type SearchStats, type StoredCell, type VectorMode, quantiseIndex, quantiserFromParams, restoreQuantised, type StoredCodes } from '@polyphony/vector-engine';
import { SeededRandom } from '@polyphony/vectors';
import { SyntheticMixture } from '@polyphony/testkit';
import { generationCpuS, timedGeneration } from '../bench-support';

const DIM = 200;
const K = 10;

function status(field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

function recall(found: Neighbour[][], truth: number[][]): number {
  let hit = 0;
  let total = 0;
  found.forEach((res, i) => {
    const want = new Set(truth[i]!.slice(0, K));
    total += want.size;
    for (const h of res.slice(0, K)) if (want.has(h.row)) hit++;
  });
  return total ? hit / total : 1;
}

function machine(): string {
  const l = loadavg();
  return `load avg ${l.map((x) => x.toFixed(2)).join(' ')}, ${cpus().length} cores`;
}

// ---------- dump format: per cell [cellId u32][n u32][rows n*i32][idBytes u32][ids utf8 \n-joined][vectors n*dim f32]
function writeDump(path: string, centroids: Float32Array, count: number, cells: StoredCell[]): void {
  const fd = openSync(path, 'w');
  const head = Buffer.from(JSON.stringify({ dim: DIM, count, nlist: centroids.length / DIM }) + '\n');
  writeSync(fd, head);
  writeSync(fd, Buffer.from(centroids.buffer, centroids.byteOffset, centroids.byteLength));
  for (const c of cells) {
    const ids = Buffer.from(c.ids.join('\n'));
    const h = Buffer.alloc(8);
    h.writeUInt32LE(c.cellId, 0);
    h.writeUInt32LE(c.rowIds.length, 4);
    writeSync(fd, h);
    const rows = Int32Array.from(c.rowIds);
    writeSync(fd, Buffer.from(rows.buffer));
    const l = Buffer.alloc(4);
    l.writeUInt32LE(ids.length, 0);
    writeSync(fd, l);
    writeSync(fd, ids);
    writeSync(fd, Buffer.from(c.vectors.buffer, c.vectors.byteOffset, c.vectors.byteLength));
  }
  closeSync(fd);
}

class DumpReader {
  private readonly fd: number;
  private pos = 0;
  readonly meta: { dim: number; count: number; nlist: number };
  readonly centroids: Float32Array;
  constructor(path: string) {
    this.fd = openSync(path, 'r');
    const first = Buffer.alloc(4096);
    readSync(this.fd, first, 0, 4096, 0);
    const nl = first.indexOf(10);
    this.meta = JSON.parse(first.subarray(0, nl).toString()) as { dim: number; count: number; nlist: number };
    this.pos = nl + 1;
    this.centroids = new Float32Array(this.meta.nlist * this.meta.dim);
    this.read(Buffer.from(this.centroids.buffer));
  }
  private read(buf: Buffer): void {
    let done = 0;
    while (done < buf.length) {
      const n = readSync(this.fd, buf, done, buf.length - done, this.pos + done);
      if (n === 0) throw new Error('dump truncated');
      done += n;
    }
    this.pos += buf.length;
  }
  *cells(): Generator<StoredCell> {
    for (let c = 0; c < this.meta.nlist; c++) {
      const h = Buffer.alloc(8);
      this.read(h);
      const n = h.readUInt32LE(4);
      const rowIds = new Int32Array(n);
      this.read(Buffer.from(rowIds.buffer));
      const l = Buffer.alloc(4);
      this.read(l);
      const idBuf = Buffer.alloc(l.readUInt32LE(0));
      this.read(idBuf);
      const vectors = new Float32Array(n * this.meta.dim);
      this.read(Buffer.from(vectors.buffer));
      yield { cellId: h.readUInt32LE(0), rowIds, ids: n ? idBuf.toString().split('\n') : [], vectors };
    }
  }
}

// ---------- codes dump (what index.quantisers + index.cell_codes hold): [params length u32][params f32][per cell: cellId u32, bytes u32, codes]
function writeCodes(path: string, index: IvfIndex): void {
  const parts = index.parts();
  const qz = parts.quantised!;
  const cs = qz.quantiser.codeSize;
  const fd = openSync(path, 'w');
  const params = qz.quantiser.toParams();
  const h = Buffer.alloc(4);
  h.writeUInt32LE(params.length, 0);
  writeSync(fd, h);
  writeSync(fd, Buffer.from(params.buffer, params.byteOffset, params.byteLength));
  for (let c = 0; c < parts.nlist; c++) {
    const from = parts.cellOffsets[c]! * cs;
    const to = parts.cellOffsets[c + 1]! * cs;
    const ch = Buffer.alloc(8);
    ch.writeUInt32LE(c, 0);
    ch.writeUInt32LE(to - from, 4);
    writeSync(fd, ch);
    if (to > from) writeSync(fd, qz.codes.subarray(from, to));
  }
  closeSync(fd);
}

/**
 * Streams the codes dump cell by cell (as a replica streams `index.cell_codes` rows): only one cell's codes
 * are in a buffer at a time, so the RSS after load is what the service holds.
 */
function readCodes(path: string, mode: 'int8' | 'pq'): StoredCodes {
  const fd = openSync(path, 'r');
  const read = (buf: Buffer, pos: number): void => {
    let done = 0;
    while (done < buf.length) {
      const n = readSync(fd, buf, done, buf.length - done, pos + done);
      if (n === 0) throw new Error('codes dump truncated');
      done += n;
    }
  };
  const h = Buffer.alloc(4);
  read(h, 0);
  const pl = h.readUInt32LE(0);
  const params = new Float32Array(pl);
  read(Buffer.from(params.buffer), 4);
  const size = fstatSync(fd).size;
  function* cells(): Generator<{ cellId: number; codes: Uint8Array }> {
    let pos = 4 + pl * 4;
    const ch = Buffer.alloc(8);
    try {
      while (pos < size) {
        read(ch, pos);
        const cellId = ch.readUInt32LE(0);
        const len = ch.readUInt32LE(4);
        pos += 8;
        if (len > 0) {
          const codes = Buffer.alloc(len);
          read(codes, pos);
          yield { cellId, codes };
        }
        pos += len;
      }
    } finally {
      closeSync(fd);
    }
  }
  return { quantiser: quantiserFromParams(mode, DIM, params), cells: cells() };
}

/** A vector mode, or `int8codes`: int8 with `rerank: 'codes'` (issue 35: short list and seed from the codes, no file read). */
type BenchMode = VectorMode | 'int8codes';

interface ServeResult {
  mode: BenchMode;
  /** CPU ms of the slowest 1% of k=10 queries (per-query process.cpuUsage): what one request at a time costs, without preemption. */
  cpuP99K10: number;
  loadS: number;
  rssMb: number;
  hwmMb: number;
  vectorMb: number;
  recall10: number;
  p50: number;
  p99: number;
  recall199: number;
  p50k199: number;
  p99k199: number;
  mask1: { rows: number; short: number; leaked: number; recall: number; p50: number; p99: number };
  mask50: { recall: number; p50: number; p99: number };
  bruteP50: number;
  ratio: number;
  floorMs: number;
  bytesPerQuery: number;
  readsPerQuery: number;
  rerankSweep: Array<{ rerank: number; recall: number; p50: number; p99: number }>;
  /** CPU time per query (user + system of this process over the query loop / queries): load-independent. */
  cpuMsK10: number;
  cpuMsK199: number;
  /** The same k=10 queries scoring every centroid (no centroid groups). */
  allCentroids: { recall10: number; p50: number; cpuMs: number };
}

async function serve(dumpPath: string, benchMode: BenchMode, truthPath: string): Promise<void> {
  const mode: VectorMode = benchMode === 'int8codes' ? 'int8' : benchMode;
  const rerank = benchMode === 'int8codes' ? 'codes' : 'file';
  const truth = JSON.parse(readFileSync(truthPath, 'utf8')) as { queries: number[]; top10: number[][]; top199: number[][]; mask1: number[][]; mask50: number[][] };
  const t0 = performance.now();
  const dump = new DumpReader(dumpPath);
  const input = { dim: dump.meta.dim, count: dump.meta.count, centroids: dump.centroids, cells: dump.cells() };
  // A replica loads the codes stored with the generation (issue 19); the parent computed them once after the build.
  const index = mode === 'float' ? await IvfIndex.restore(input) : await restoreQuantised(input, { mode, rerank }, readCodes(`${dumpPath}.${mode}`, mode));
  const loadS = (performance.now() - t0) / 1000;
  (globalThis as { gc?: () => void }).gc?.();
  const rssMb = status('VmRSS');
  const n = index.size;
  const queries = truth.queries;
  const time = (fn: (row: number, i: number) => Neighbour[]): { res: Neighbour[][]; ms: number[]; cpuMs: number; cpuEach: number[] } => {
    const res: Neighbour[][] = [];
    const ms: number[] = [];
    const cpuEach: number[] = [];
    const c0 = process.cpuUsage();
    queries.forEach((row, i) => {
      const t = performance.now();
      const ci = process.cpuUsage();
      res.push(fn(row, i));
      const cu = process.cpuUsage(ci);
      ms.push(performance.now() - t);
      cpuEach.push((cu.user + cu.system) / 1000);
    });
    const c = process.cpuUsage(c0);
    return { res, ms, cpuMs: (c.user + c.system) / 1000 / queries.length, cpuEach };
  };
  const rng = new SeededRandom(77);
  for (let i = 0; i < 30; i++) index.searchByRow(rng.nextInt(n), { k: K }); // JIT warm-up
  const stats: SearchStats = { mode: 'ivf', cellsProbed: 0, distanceComputations: 0, centroidComputations: 0 };
  let candidates = 0;
  let reranked = 0;
  const k10 = time((row) => {
    const r = index.searchByRow(row, { k: K, stats });
    candidates += stats.distanceComputations;
    reranked += stats.reranked ?? 0;
    return r;
  });
  const k199 = time((row) => index.searchByRow(row, { k: 199 }));
  const flat = new IvfIndex({ ...index.parts(), groups: null });
  for (let i = 0; i < 30; i++) flat.searchByRow(rng.nextInt(n), { k: K });
  const k10flat = time((row) => flat.searchByRow(row, { k: K }));
  const recall199 = (() => {
    let hit = 0;
    let total = 0;
    k199.res.forEach((res, i) => {
      const want = new Set(truth.top199[i]!);
      total += want.size;
      for (const h of res) if (want.has(h.row)) hit++;
    });
    return hit / total;
  })();
  const maskOf = (density: number, seed: number): AvailabilityMask => {
    const r = new SeededRandom(seed);
    const rows: number[] = [];
    for (let i = 0; i < n; i++) if (r.nextFloat() < density) rows.push(i);
    return AvailabilityMask.fromRows(n, rows);
  };
  const m1 = maskOf(0.01, 10);
  const mask1 = time((row) => index.searchByRow(row, { k: K, mask: m1 }));
  let leaked = 0;
  for (const res of mask1.res) for (const h of res) if (!m1.has(h.row)) leaked++;
  const m50 = maskOf(0.5, 500);
  const mask50 = time((row) => index.searchByRow(row, { k: K, mask: m50 }));
  const sweep: ServeResult['rerankSweep'] = [];
  if (mode !== 'float') {
    for (const rerank of [20, 50, 100, 200, 400]) {
      const t = time((row) => index.searchByRow(row, { k: K, rerank }));
      sweep.push({ rerank, recall: recall(t.res, truth.top10), p50: pct(t.ms, 50), p99: pct(t.ms, 99) });
    }
  }
  // Brute force in the same process (20 queries: ~0.2-1 s each).
  const brute: number[] = [];
  for (const row of queries.slice(0, 20)) {
    const q = index.getVector(row);
    const t = performance.now();
    index.exactSearch(q, { k: K, exclude: [row] });
    brute.push(performance.now() - t);
  }
  // Physical floor: copy the bytes one query reads (probed cells' vectors or codes, one memcpy per cell).
  const parts = index.parts();
  const perRow = mode === 'float' ? DIM * 4 : parts.quantised!.quantiser.codeSize;
  const store = mode === 'float' ? new Uint8Array(parts.vectors.buffer, parts.vectors.byteOffset, parts.vectors.byteLength) : parts.quantised!.codes;
  const scratch = new Uint8Array(4 * 1024 * 1024);
  const floorMs: number[] = [];
  let bytesPerQuery = 0;
  for (const row of queries) {
    const q = index.getVector(row);
    const scores = new Float64Array(index.nlist);
    for (let c = 0; c < index.nlist; c++) {
      const cen = index.centroid(c);
      let s = 0;
      for (let d = 0; d < DIM; d++) s += cen[d]! * q[d]!;
      scores[c] = s;
    }
    const order = Array.from(scores.keys()).sort((a, b) => scores[b]! - scores[a]!).slice(0, index.defaultNprobe);
    const t = performance.now();
    let bytes = 0;
    for (const c of order) {
      const start = parts.cellOffsets[c]! * perRow;
      const end = parts.cellOffsets[c + 1]! * perRow;
      scratch.set(store.subarray(start, Math.min(end, start + scratch.length)), 0);
      bytes += end - start;
    }
    floorMs.push(performance.now() - t);
    bytesPerQuery += bytes;
  }
  const res: ServeResult = {
    mode: benchMode,
    cpuP99K10: pct(k10.cpuEach, 99),
    loadS,
    rssMb,
    hwmMb: status('VmHWM'),
    vectorMb: index.vectorBytes / 1048576,
    recall10: recall(k10.res, truth.top10),
    p50: pct(k10.ms, 50),
    p99: pct(k10.ms, 99),
    recall199,
    p50k199: pct(k199.ms, 50),
    p99k199: pct(k199.ms, 99),
    mask1: { rows: m1.count, short: mask1.res.filter((r) => r.length < K).length, leaked, recall: recall(mask1.res, truth.mask1), p50: pct(mask1.ms, 50), p99: pct(mask1.ms, 99) },
    mask50: { recall: recall(mask50.res, truth.mask50), p50: pct(mask50.ms, 50), p99: pct(mask50.ms, 99) },
    bruteP50: pct(brute, 50),
    ratio: pct(brute, 50) / pct(k10.ms, 50),
    floorMs: pct(floorMs, 50),
    bytesPerQuery: bytesPerQuery / queries.length,
    readsPerQuery: reranked / queries.length,
    rerankSweep: sweep,
    cpuMsK10: k10.cpuMs,
    cpuMsK199: k199.cpuMs,
    allCentroids: { recall10: recall(k10flat.res, truth.top10), p50: pct(k10flat.ms, 50), cpuMs: k10flat.cpuMs },
  };
  void candidates;
  process.stdout.write(JSON.stringify(res) + '\n');
}

async function main(): Promise<void> {
  if (process.argv[2] === 'serve') return serve(process.argv[3]!, process.argv[4] as VectorMode, process.argv[5]!);
  const n = Number(process.argv[2] ?? 1_000_000);
  const queryCount = Number(process.argv[3] ?? 200);
  const modes = (process.argv[4] ?? 'float,int8,pq').split(',') as BenchMode[];
  const workers = Number(process.argv[5] ?? 2);
  console.log(`IVF vector modes: N=${n}, dim=${DIM}, ${queryCount} queries, node ${process.version}, ${new Date().toISOString()}, ${machine()}`);
  const mixture = new SyntheticMixture();
  const cells: StoredCell[] = [];
  let centroids = new Float32Array(0);
  const cpu0 = process.cpuUsage();
  // CPU time per build phase, all threads (process.cpuUsage counts the worker threads too).
  const phaseCpu: Record<string, number> = {};
  let phase = 'ingest';
  let phaseStart = cpu0.user + cpu0.system;
  const t0 = performance.now();
  const { index, report } = await buildIvfIndex(
    (function* (): Generator<VectorBatch> {
      for (const b of timedGeneration(mixture.batches(n, 5000))) yield { ids: b.ids, vectors: b.vectors };
    })(),
    {
      expectedCount: n,
      workers,
      onProgress: (p) => {
        if (p.phase === phase) return;
        const c = process.cpuUsage();
        phaseCpu[phase] = (c.user + c.system - phaseStart) / 1e6;
        phase = p.phase;
        phaseStart = c.user + c.system;
      },
      onTrained: (info) => {
        centroids = info.centroids.slice();
      },
      onCell: (cellId, rowIds, vectors, ids) => {
        cells.push({ cellId, rowIds: rowIds.slice(), ids: [...ids], vectors: vectors.slice() });
      },
    },
  );
  const buildS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  phaseCpu[phase] = (cpu.user + cpu.system + cpu0.user + cpu0.system - phaseStart) / 1e6;
  console.log(`build CPU per phase (s, all threads): ${Object.entries(phaseCpu).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
  console.log(`  of which generating the synthetic data (ingest phase): ${generationCpuS().toFixed(1)} s CPU; the build itself ${((cpu.user + cpu.system) / 1e6 - generationCpuS()).toFixed(1)} s CPU`);
  const tm = report.timingsMs;
  console.log(
    `build (${workers} worker threads): ${buildS.toFixed(1)} s wall (incl. generating the data), ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU; ` +
      `ingest+generate ${(tm.ingest / 1000).toFixed(1)}, train ${(tm.train / 1000).toFixed(1)}, assign ${(tm.assign / 1000).toFixed(1)}, arrange ${(tm.arrange / 1000).toFixed(1)}, emit ${(tm.emit / 1000).toFixed(1)} s; ` +
      `nlist ${report.nlist}, sample ${report.sampleSize}; ${machine()}`,
  );
  const dir = join(tmpdir(), `ivf-modes-${process.pid}`);
  execFileSync('mkdir', ['-p', dir]);
  const dumpPath = join(dir, 'cells.bin');
  writeDump(dumpPath, centroids, n, cells);
  cells.length = 0;
  const rng = new SeededRandom(2024);
  const queries = Array.from({ length: queryCount }, () => rng.nextInt(n));
  const maskRows = (density: number, seed: number): AvailabilityMask => {
    const r = new SeededRandom(seed);
    const rows: number[] = [];
    for (let i = 0; i < n; i++) if (r.nextFloat() < density) rows.push(i);
    return AvailabilityMask.fromRows(n, rows);
  };
  const m1 = maskRows(0.01, 10);
  const m50 = maskRows(0.5, 500);
  const tTruth = performance.now();
  const truth = { queries, top10: [] as number[][], top199: [] as number[][], mask1: [] as number[][], mask50: [] as number[][] };
  for (const row of queries) {
    const q = index.getVector(row);
    const all = index.exactSearch(q, { k: 199, exclude: [row] });
    truth.top199.push(all.map((h) => h.row));
    truth.top10.push(all.slice(0, K).map((h) => h.row));
    truth.mask1.push(index.exactSearch(q, { k: K, mask: m1, exclude: [row] }).map((h) => h.row));
    truth.mask50.push(index.exactSearch(q, { k: K, mask: m50, exclude: [row] }).map((h) => h.row));
  }
  console.log(`ground truth (exact, float in memory): ${((performance.now() - tTruth) / 1000).toFixed(0)} s for ${queryCount} queries x 3`);
  const truthPath = join(dir, 'truth.json');
  writeFileSync(truthPath, JSON.stringify(truth));
  // Generation switch: the swap itself is one reference assignment; time a million of them.
  const holder = { live: index as IvfIndex | undefined };
  const ts = performance.now();
  for (let i = 0; i < 1e6; i++) holder.live = i & 1 ? index : undefined;
  const swapNs = ((performance.now() - ts) * 1e6) / 1e6;
  console.log(`generation swap (reference assignment): ${swapNs.toFixed(1)} ns; a replica's switch time = its load time below + map catch-up`);

  // Quantisation once after the build, in worker threads, as the building replica does; the codes are stored.
  for (const mode of new Set(modes.map((m): VectorMode => (m === 'int8codes' ? 'int8' : m)))) {
    if (mode === 'float') continue;
    const tq = performance.now();
    const cq = process.cpuUsage();
    const quantised = await quantiseIndex(index, { mode, workers });
    const cpuq = process.cpuUsage(cq);
    writeCodes(`${dumpPath}.${mode}`, quantised);
    quantised.parts().quantised!.file.close();
    console.log(`quantise ${mode} after the build (${workers} worker threads): ${((performance.now() - tq) / 1000).toFixed(1)} s wall, main-thread CPU ${((cpuq.user + cpuq.system) / 1e6).toFixed(1)} s; ${machine()}`);
  }

  const results: ServeResult[] = [];
  for (const mode of modes) {
    const out = await new Promise<string>((resolve, reject) => {
      const child = fork(__filename, ['serve', dumpPath, mode, truthPath], { execArgv: ['--expose-gc', '--max-old-space-size=512', '--max-semi-space-size=2'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => (buf += d.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(buf) : reject(new Error(`serve ${mode} exited ${code}`))));
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as ServeResult;
    results.push(r);
    console.log(`mode ${mode}: ${JSON.stringify(r)}`);
    console.log(`  (${machine()})`);
  }
  rmSync(dir, { recursive: true, force: true });
  console.log('\n| mode | vectors in memory | RSS after load (peak) | load time | recall@10 | p50 / p99 k=10 | CPU ms/query k=10 (all centroids: recall, CPU) | recall@199 | p50 / p99 k=199 | CPU ms/query k=199 | 1% mask: recall, < k, p99 | 50% mask recall, p99 | brute force p50 (ratio) | floor: bytes read, memcpy time |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.mode} | ${r.vectorMb.toFixed(0)} MiB | ${r.rssMb.toFixed(0)} MiB (${r.hwmMb.toFixed(0)}) | ${r.loadS.toFixed(1)} s | ${r.recall10.toFixed(4)} | ${r.p50.toFixed(2)} / ${r.p99.toFixed(2)} ms | ` +
        `${r.cpuMsK10.toFixed(2)}, CPU p99 ${r.cpuP99K10.toFixed(2)} (${r.allCentroids.recall10.toFixed(4)}, ${r.allCentroids.cpuMs.toFixed(2)}) | ` +
        `${r.recall199.toFixed(4)} | ${r.p50k199.toFixed(2)} / ${r.p99k199.toFixed(2)} ms | ${r.cpuMsK199.toFixed(2)} | ${r.mask1.recall.toFixed(4)}, ${r.mask1.short}, ${r.mask1.p99.toFixed(2)} ms | ` +
        `${r.mask50.recall.toFixed(4)}, ${r.mask50.p99.toFixed(2)} ms | ${r.bruteP50.toFixed(0)} ms (${r.ratio.toFixed(0)}x) | ${(r.bytesPerQuery / 1048576).toFixed(2)} MiB, ${r.floorMs.toFixed(2)} ms |`,
    );
  }
  for (const r of results) if (r.rerankSweep.length) console.log(`short-list sweep ${r.mode}: ${r.rerankSweep.map((s) => `R=${s.rerank}: recall ${s.recall.toFixed(4)}, p50 ${s.p50.toFixed(2)}, p99 ${s.p99.toFixed(2)}`).join('; ')}`);
  console.log(`SUMMARY ${JSON.stringify({ n, buildS, results })}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
