#!/usr/bin/env python3
"""
Embedding variants of issue 13 on the cache of musicnn-variants-cache.ts (24 patches, the worker's budget), numpy only:
same-soundtrack precision@5 exactly as musicnn-retrieval.ts / musicnn-subsets.ts compute it (cosine, ties by name,
queries from groups of >= 6 tracks; held-out = odd first sha256 byte of the track name, corpus.ts isHeldOut), on
  - the 16-group corpus: tuning queries among tuning tracks, held-out queries against the whole corpus;
  - every 3-group subset (560) and the two sets matched to the issue's benchmark (musicnn-subsets.ts: by shape,
    chance 0.30-0.40 and 90-150 tracks; by baseline, dsp-v1 within 0.05 of 0.646).
Unsupervised variants are fitted on all tuning tracks (as the shipped constants). Supervised ones (using the soundtrack
labels: within-soundtrack covariance whitening = WCCN, shrinkage LDA) are evaluated GROUP-DISJOINT: for each 3-group
subset the projection is fitted on the tuning tracks of the 13 other groups only; for the 16-group figure each group's
queries use a projection fitted without that group (leave-one-group-out, ranked against the whole corpus); their
tuning-side figures use tuning tracks only. The unsupervised recipe of the shipped embedding is run through the same
protocol for comparison. Exploration only: nothing here ships; a variant worth shipping is refitted in TypeScript.

Run (after node bench/dist/analysis-worker/musicnn-variants-cache.js):
  OPENBLAS_NUM_THREADS=1 python3 bench/src/analysis-worker/musicnn-variants.py
  (MUSICNN_PRECISION=int8 reads the int8 cache `musicnn-variants-24-int8`, default the float one; SHIPPED_ONLY=1 reports
  dsp-v1 and the shipped vector only; COMMON_TRACKS=1 keeps only the tracks present in both caches; COMPARE_INT8=1 with
  COMMON_TRACKS=1 on the float cache also prints int8 vs float differences and the int8 shipped vector's figures)
(one BLAS thread: on the shared machine threaded BLAS made a run 20x slower.)
"""
import functools, glob, itertools, json, os, time

import numpy as np

import musicnn_study as study
from musicnn_study import SESSION9_GROUPS, fit_pca, fit_z, fuse, held_out, shipped, unit

# MUSICNN_PRECISION=int8 reads the int8 cache (musicnn-variants-cache.ts variantCacheFolder); default the float one
PRECISION = os.environ.get('MUSICNN_PRECISION', 'float')
CACHE = '/tmp/polyphony-audio-bench/musicnn-variants-24' + ('' if PRECISION == 'float' else '-' + PRECISION)
# SHIPPED_ONLY=1: only dsp-v1 and the shipped vector (the int8 vs float comparison), not the variant study
SHIPPED_ONLY = os.environ.get('SHIPPED_ONLY') == '1'
MIN_GROUP = int(os.environ.get('MIN_GROUP', 6))


def load():
    """The cached tracks of the 16 groups of session 9 (SESSION9_GROUPS): the cache of the grown corpus (session 10)
    holds more, which musicnn-grown.py studies; this script keeps session 9's figures reproducible on it."""
    recs = []
    files = sorted(glob.glob(CACHE + '/*.json'))
    if os.environ.get('COMMON_TRACKS') == '1':
        # only the tracks cached at both precisions (the float and int8 caches may cover different parts of the corpus)
        other = CACHE[:-len('-' + PRECISION)] if PRECISION != 'float' else CACHE + '-int8'
        have = {os.path.basename(f) for f in glob.glob(other + '/*.json')}
        files = [f for f in files if os.path.basename(f) in have]
    for f in files:
        r = json.load(open(f))
        if r['group'] in SESSION9_GROUPS:
            recs.append(r)
    recs.sort(key=lambda r: r['name'])
    return recs


class Bench:
    def __init__(self, recs):
        self.recs = recs
        self.names = [r['name'] for r in recs]
        self.groups = np.array([r['group'] for r in recs])
        self.N = len(recs)
        self.held = np.array([held_out(n) for n in self.names])
        self.tune = ~self.held
        gs, cnt = np.unique(self.groups, return_counts=True)
        self.gsize = dict(zip(gs, cnt))
        self.glist = list(gs)
        self.gid = np.array([self.glist.index(g) for g in self.groups])

    def p5(self, V, queries, pool, per_group=False):
        """queries, pool: index arrays (pool ascending). Cosine distance, ties by name (= index order)."""
        queries = np.asarray(queries, dtype=int)
        pool = np.asarray(pool, dtype=int)
        keep = np.array([self.gsize[self.groups[q]] >= MIN_GROUP for q in queries], dtype=bool)
        queries = queries[keep]
        if len(queries) == 0:
            return (float('nan'), {}, 0) if per_group else float('nan')
        Vn = unit(np.asarray(V, dtype=np.float64))
        d = 1 - Vn[queries] @ Vn[pool].T
        d[pool[None, :] == queries[:, None]] = np.inf
        order = np.argsort(d, axis=1, kind='stable')[:, :5]
        hits = (self.gid[pool][order] == self.gid[queries][:, None]).mean(1)
        m = float(hits.mean())
        if per_group:
            res = {}
            for q, h in zip(queries, hits):
                res.setdefault(self.groups[q], []).append(h)
            return m, {g: float(np.mean(l)) for g, l in sorted(res.items())}, len(hits)
        return m

    def idx(self, mask):
        return np.nonzero(mask)[0]

    def tuning_fig(self, V):
        t = self.idx(self.tune)
        return self.p5(V, t, t)

    def held16(self, V, per_group=False):
        return self.p5(V, self.idx(self.held), np.arange(self.N), per_group)

    def subsets(self):
        return list(itertools.combinations(self.glist, 3))

    def subset_fig(self, V, s):
        inS = np.isin(self.groups, s)
        pool = self.idx(inS)
        q = self.idx(inS & self.held)
        return self.p5(V, q, pool)

    def subset_meta(self, s):
        inS = np.isin(self.groups, s)
        pool = self.idx(inS)
        q = self.idx(inS & self.held)
        sizes = {g: (self.groups[pool] == g).sum() for g in s}
        qq = [i for i in q if sizes[self.groups[i]] >= MIN_GROUP]
        chance = np.mean([(sizes[self.groups[i]] - 1) / (len(pool) - 1) for i in q]) if len(q) else float('nan')
        return chance, len(pool)

recs = load()
B = Bench(recs)
print(f'{CACHE}: {B.N} tracks, {B.tune.sum()} tuning, {B.held.sum()} held-out, groups {len(B.glist)}', flush=True)

def pen(r, which, kind='mean'):
    X = np.array(r[which])
    return X.mean(0) if kind == 'mean' else X.std(0)

M = np.array([np.concatenate([pen(r, 'msdPen'), pen(r, 'mttPen')]) for r in recs])
Mstd = np.array([np.concatenate([pen(r, 'msdPen', 'std'), pen(r, 'mttPen', 'std')]) for r in recs])
D = np.array([r['dsp'] for r in recs])
T = np.array([np.concatenate([np.mean(r['msdTags'], 0), np.mean(r['mttTags'], 0)]) for r in recs])
TL = np.log(np.clip(T, 1e-4, 1 - 1e-4) / (1 - np.clip(T, 1e-4, 1 - 1e-4)))
PM = np.array([r['patchMel'] for r in recs])
DM = np.array([r['dspMel'] for r in recs])
tune = B.idx(B.tune)


def z(X, idx=tune):
    return fit_z(X, idx)


# --- subsets: matched sets defined by dsp-v1 (committed constants), as musicnn-subsets.ts
SUBS = B.subsets()
meta = [B.subset_meta(s) for s in SUBS]
dspfig = np.array([B.subset_fig(D, s) for s in SUBS])
shape = np.array([(0.3 <= c <= 0.4 and 90 <= n <= 150) for c, n in meta])
base = np.abs(dspfig - 0.646) <= 0.05
print(f'subsets {len(SUBS)}; matched by shape {shape.sum()}, by baseline {base.sum()}', flush=True)


def subset_summary(figs):
    figs = np.array(figs)
    return f'all3 {np.nanmean(figs):.3f}  shape {np.nanmean(figs[shape]):.3f}  base {np.nanmean(figs[base]):.3f}'


def report(label, V, subsets=True):
    t = B.tuning_fig(V)
    h = B.held16(V)
    s = subset_summary([B.subset_fig(V, x) for x in SUBS]) if subsets else ''
    print(f'{label:70s} dims {V.shape[1]:4d} tune {t:.3f} held16 {h:.3f}  {s}', flush=True)
    return t, h




# ---------------- group-disjoint machinery
def recipe_v1(idx, w=0.6, km=100, Mx=None):
    """the shipped recipe refitted on idx (musicnn_study.recipe_v1) on M or Mx."""
    return study.recipe_v1(M if Mx is None else Mx, D, idx, w, km)


wccn = functools.partial(study.wccn, groups=B.groups)
lda = functools.partial(study.lda, groups=B.groups)


def disjoint(make, label, do_subsets=True):
    """make(train_idx) -> vectors of all tracks. Group-disjoint figures."""
    t0 = time.time()
    # leave-one-group-out: tuning-only figure and held-out figure (ranked vs whole corpus)
    tq, hq = [], []
    for g in B.glist:
        if B.gsize[g] < MIN_GROUP:
            continue
        train = B.idx(B.tune & (B.groups != g))
        V = make(train)
        tq_idx = B.idx(B.tune & (B.groups == g))
        hq_idx = B.idx(B.held & (B.groups == g))
        r = B.p5(V, tq_idx, B.idx(B.tune), True); tq += [r[0]] * r[2]
        r = B.p5(V, hq_idx, np.arange(B.N), True); hq += [r[0]] * r[2]
    tl, hl = np.nanmean(tq), np.nanmean(hq)
    s = ''
    if do_subsets:
        ft, fh = [], []
        for x in SUBS:
            inS = np.isin(B.groups, x)
            train = B.idx(B.tune & ~inS)
            V = make(train)
            ft.append(B.p5(V, B.idx(inS & B.tune), B.idx(inS & B.tune)))
            fh.append(B.subset_fig(V, x))
        ft = np.array(ft)
        s = f'| triples tune {np.nanmean(ft):.3f} shape {np.nanmean(ft[shape]):.3f} base {np.nanmean(ft[base]):.3f} | held {subset_summary(fh)}'
    print(f'[disjoint] {label:60s} LOGO tune {tl:.3f} LOGO held16 {hl:.3f} {s}  ({time.time()-t0:.0f}s)', flush=True)


def compare_int8():
    """The same tracks from the int8 cache (musicnn-variants-24-int8): tag and penultimate differences per patch, track
    tags, the shipped vector's cosine distance int8 vs float, and the int8 shipped vector's precision."""
    by_name = {}
    for f in glob.glob(CACHE + '-int8/*.json'):
        r = json.load(open(f))
        by_name[r['name']] = r
    q = [by_name[r['name']] for r in recs]
    tag_d = np.concatenate([np.abs(np.array(a[k]) - np.array(b[k])).ravel() for a, b in zip(recs, q) for k in ('msdTags', 'mttTags')])
    track_d = np.array([np.abs(np.mean(a[k], 0) - np.mean(b[k], 0)).max() for a, b in zip(recs, q) for k in ('msdTags', 'mttTags')])
    pen_d = np.concatenate([1 - (unit(np.array(a[k])) * unit(np.array(b[k]))).sum(1) for a, b in zip(recs, q) for k in ('msdPen', 'mttPen')])
    M8 = np.array([np.concatenate([pen(r, 'msdPen'), pen(r, 'mttPen')]) for r in q])
    D8 = np.array([r['dsp'] for r in q])
    V, V8 = shipped(M, D), shipped(M8, D8)
    fus = 1 - (unit(V) * unit(V8)).sum(1)
    held = B.held
    pct = lambda x, p: float(np.quantile(x, p))
    print(f'int8 vs float, {len(q)} tracks (dsp-v1 identical: {bool(np.allclose(D, D8))}): patch tags |d| max {tag_d.max():.4f} mean {tag_d.mean():.5f}; '
          f'track tags |d| max {track_d.max():.4f}; penultimate cosine distance median {pct(pen_d, .5):.1e} p99 {pct(pen_d, .99):.1e} max {pen_d.max():.1e}; '
          f'shipped vector cosine distance median {pct(fus, .5):.1e} p99 {pct(fus, .99):.1e} max {fus.max():.1e} (held-out: median {pct(fus[held], .5):.1e} max {fus[held].max():.1e})', flush=True)
    report('shipped v1 (committed constants), int8 MusiCNN', V8)


def main():
    ws = [0.4, 0.5, 0.6, 0.7, 0.8]
    report('dsp-v1', D)
    report('shipped v1 (committed constants)', shipped(M, D))
    if os.environ.get('COMPARE_INT8') == '1':
        compare_int8()
    if SHIPPED_ONLY:
        return
    report('MSD+MTT pen mean z (400)', z(M))
    # refit of the v1 recipe at 24 patches, w by tuning
    best = max(ws, key=lambda w: B.tuning_fig(recipe_v1(tune, w)))
    report(f'v1 recipe refit at 24 patches w={best}', recipe_v1(tune, best))
    # hubness: centre the stored vector on tuning mean
    V = shipped(M, D); report('shipped v1, re-centred on tuning mean', V - V[tune].mean(0))
    # blocks
    for lab, X in [('tags logit', TL), ('tags prob', T), ('patch log-mel stats', PM), ('dsp log-mel stats', DM), ('pen std', Mstd)]:
        report(f'block alone: {lab} z', z(X), subsets=False)
    def fuse3(blocks, ws):
        return np.hstack([w * unit(b) for b, w in zip(blocks, ws)])
    a = fit_pca(z(M), tune, 100); b = fit_pca(z(D), tune, 100)
    for lab, X in [('tags logit', TL), ('patch log-mel stats', PM), ('dsp log-mel stats', DM), ('pen std', Mstd)]:
        c = z(X)
        grid = [(w1, w2, w3) for w1 in [0.4,0.5,0.6] for w2 in [0.2,0.3,0.4] for w3 in [0.1,0.2,0.3]]
        bw = max(grid, key=lambda g: B.tuning_fig(fuse3([a, b, c], g)))
        report(f'v1 blocks + {lab} z (unprojected) w={bw}', fuse3([a, b, c], bw))
    # supervised, evaluated as if shipped with labels of the same soundtracks (optimistic; not a claim)
    for lam in [0.3, 0.5, 0.8]:
        report(f'SEEN groups: WCCN(M z, lam {lam}) -> PCA100 + D PCA100, w=0.6', fuse(wccn(z(M), tune, lam, 100), fit_pca(z(D), tune, 100), 0.6))
    # supervised, group-disjoint
    disjoint(lambda idx: recipe_v1(idx, 0.6), 'v1 recipe (unsupervised) refit on train groups, w=0.6')
    for lam in [0.1, 0.3, 0.5, 0.8]:
        disjoint(lambda idx: fuse(wccn(fit_z(M, idx), idx, lam, 100), fit_pca(fit_z(D, idx), idx, 100), 0.6), f'WCCN(M z, lam {lam}) -> PCA100 + D PCA100, w=0.6')
    for lam in [0.3, 0.8]:
        disjoint(lambda idx: fuse(wccn(fit_z(M, idx), idx, lam, 100), wccn(fit_z(D, idx), idx, lam, 100), 0.6), f'WCCN(M z) + WCCN(D z), lam {lam}, PCA 100+100, w=0.6')
    for lam in [0.3, 0.8]:
        for alpha in [0.0, 1.0]:
            disjoint(lambda idx: fuse(lda(fit_z(M, idx), idx, lam, 100, alpha), fit_pca(fit_z(D, idx), idx, 100), 0.6), f'LDA(St|Sw, M z, lam {lam}, alpha {alpha}) 100 + D PCA100, w=0.6')
    for lam in [0.3, 0.8]:
        disjoint(lambda idx: wccn(recipe_v1(idx, 0.6), idx, lam, None), f'v1 recipe then WCCN (200x200), lam {lam}')
    m, per, n = B.held16(shipped(M, D), True)
    print(f'shipped v1 per group (held-out, 16 groups, {n} queries): ' + ', '.join(f'{g} {p:.2f}' for g, p in per.items()))


if __name__ == '__main__':
    main()
