#!/usr/bin/env python3
"""
Issue 13, session 10: the variants study of musicnn-variants.py on the GROWN corpus (corpus.ts, 16 soundtracks of
session 9 plus the groups added in session 10), on the cache of musicnn-variants-cache.ts (24 patches, the worker's
budget). numpy only. Same-soundtrack precision@5 exactly as musicnn-retrieval.ts / musicnn-subsets.ts compute it
(cosine, ties by name, queries from groups of >= 6 tracks; held-out = odd first sha256 byte of the track name,
corpus.ts isHeldOut, so the 16 old groups keep their split).

Figures of a variant:
  tune      tuning queries of all groups among all tuning tracks (what a choice is made on);
  held16    held-out queries of the 16 session-9 groups against the 16-group corpus (session 9's "held-out 16 groups");
  heldAll   held-out queries of all groups against the whole grown corpus (per group too);
  triples   3-group benchmarks (held-out queries of the triple against the triple's tracks), mean over the triples
            matched to the issue's benchmark by dsp-v1 (musicnn-subsets.ts): "shape" (chance 0.30-0.40, 90-150
            tracks) and "baseline" (dsp-v1 within 0.05 of 0.646), among the 16 old groups (16:) and among all groups
            (all:).
Unsupervised variants are fitted on all tuning tracks of the grown corpus. Supervised ones (WCCN, shrinkage LDA: they
use the soundtrack labels) and, for comparison, the unsupervised v1 recipe are also run GROUP-DISJOINT: per matched
triple the projection is fitted on the tuning tracks of every OTHER group; per fold of a 5-fold split of the groups
(group k in fold k mod 5, groups sorted by name) it is fitted on the other folds' tuning tracks and evaluated inside
the fold only (a benchmark of ~6 soundtracks none of which shaped it); leave-one-group-out (LOGO) ranks a group's
held-out queries against the whole corpus with a projection fitted without that group. Exploration only: nothing here
ships; a variant worth shipping is refitted in TypeScript.

Run (after node bench/dist/analysis-worker/musicnn-variants-cache.js):
  OPENBLAS_NUM_THREADS=1 python3 bench/src/analysis-worker/musicnn-grown.py [--quick | --curve | --new-only]
(--curve: learning curve of the fold figures over the number of training soundtracks; --new-only: 3-group benchmarks
of the new groups only.)
"""
import functools, glob, itertools, json, os, sys, time

import numpy as np

import musicnn_study as study
from musicnn_study import SESSION9_GROUPS, fit_pca, fit_z, fuse, held_out, unit

CACHE = '/tmp/polyphony-audio-bench/musicnn-variants-24'
MIN_GROUP = 6
OLD16 = SESSION9_GROUPS
QUICK = '--quick' in sys.argv
T0 = time.time()


def log(s):
    print(s, flush=True)


recs = sorted((json.load(open(f)) for f in glob.glob(CACHE + '/*.json')), key=lambda r: r['name'])
names = [r['name'] for r in recs]
groups = np.array([r['group'] for r in recs])
N = len(recs)
held = np.array([held_out(n) for n in names])
tune = ~held
glist = sorted(set(groups))
gid = np.array([glist.index(g) for g in groups])
gsize = {g: int((groups == g).sum()) for g in glist}
qgroups = [g for g in glist if gsize[g] >= MIN_GROUP]
qok = np.array([gsize[g] >= MIN_GROUP for g in groups])
old = np.isin(groups, OLD16)
idx = lambda m: np.nonzero(m)[0]
TUNE = idx(tune)
log(f'{N} tracks in {len(glist)} groups ({len(qgroups)} with >= {MIN_GROUP} tracks): tuning {tune.sum()}, held-out {held.sum()}; '
    f'16 old groups {old.sum()} tracks; load {os.getloadavg()[0]:.1f}; {time.strftime("%H:%M UTC", time.gmtime())}')
log('groups: ' + ', '.join(f'{g} {gsize[g]} ({(held & (groups == g)).sum()} held)' for g in glist))


def hits(Vn, queries, pool):
    """per-query P@5 (queries of groups >= MIN_GROUP only), cosine on unit rows, ties by index (= name order)."""
    queries = queries[qok[queries]]
    if len(queries) == 0:
        return queries, np.zeros(0)
    d = 1 - Vn[queries] @ Vn[pool].T
    d[pool[None, :] == queries[:, None]] = np.inf
    order = np.argsort(d, axis=1, kind='stable')[:, :5]
    return queries, (gid[pool][order] == gid[queries][:, None]).mean(1)


def p5(Vn, queries, pool):
    q, h = hits(Vn, queries, pool)
    return float(h.mean()) if len(h) else float('nan')


# ---- features
M = np.array([np.concatenate([np.mean(r['msdPen'], 0), np.mean(r['mttPen'], 0)]) for r in recs])
D = np.array([r['dsp'] for r in recs])
PAT = [np.hstack([np.array(r['msdPen']), np.array(r['mttPen'])]) for r in recs]  # patches x 400
LEV = [np.array(r.get('patchLevel') or [1.0] * len(r['msdPen'])) for r in recs]


def shipped(Mx=M):
    return study.shipped(Mx, D)


# ---- triples and matched sets (by dsp-v1, committed constants)
Dn = unit(D)


def triple_sets(pool_groups):
    out = []
    for s in itertools.combinations(pool_groups, 3):
        inS = np.isin(groups, s)
        pool = idx(inS)
        q = idx(inS & held)
        sizes = {g: gsize[g] for g in s}
        if len(q) == 0:
            continue
        chance = np.mean([(sizes[groups[i]] - 1) / (len(pool) - 1) for i in q])
        f = p5(Dn, q, pool)
        out.append(dict(s=s, pool=pool, q=q, tq=idx(inS & tune), chance=chance, n=len(pool), dsp=f))
    return out


TR16 = triple_sets([g for g in glist if g in OLD16])
TRALL = triple_sets(glist)
for T in (TR16, TRALL):
    for t in T:
        t['shape'] = 0.3 <= t['chance'] <= 0.4 and 90 <= t['n'] <= 150
        t['base'] = abs(t['dsp'] - 0.646) <= 0.05
M16 = [t for t in TR16 if t['shape'] or t['base']]
MALL = [t for t in TRALL if t['shape'] or t['base']]
log(f'triples: 16 groups {len(TR16)} (shape {sum(t["shape"] for t in TR16)}, baseline {sum(t["base"] for t in TR16)}); '
    f'all groups {len(TRALL)} (shape {sum(t["shape"] for t in TRALL)}, baseline {sum(t["base"] for t in TRALL)}); '
    f'matched union: {len(M16)} / {len(MALL)}')


def tri_fig(vals, T, key):
    v = [x for x, t in zip(vals, T) if t[key]]
    return float(np.nanmean(v)) if v else float('nan')


ROWS = []


def evaluate(label, V, dims=None, triples_all=True):
    """figures of vectors fitted once (unsupervised, or supervised on all tuning tracks = 'seen')."""
    Vn = unit(np.asarray(V, dtype=np.float64))
    t = p5(Vn, TUNE, TUNE)
    h16 = p5(Vn, idx(held & old), idx(old))
    q, hh = hits(Vn, idx(held), np.arange(N))
    hall = float(hh.mean())
    per = {g: float(hh[groups[q] == g].mean()) for g in qgroups if (groups[q] == g).any()}
    f16 = [p5(Vn, x['q'], x['pool']) for x in TR16]
    fall = [p5(Vn, x['q'], x['pool']) for x in (TRALL if triples_all else MALL)]
    TT = TRALL if triples_all else MALL
    row = dict(label=label, dims=dims or V.shape[1], tune=t, held16=h16, heldAll=hall, per=per,
               all16=float(np.nanmean(f16)), shape16=tri_fig(f16, TR16, 'shape'), base16=tri_fig(f16, TR16, 'base'),
               allAll=float(np.nanmean(fall)) if triples_all else float('nan'), shapeAll=tri_fig(fall, TT, 'shape'), baseAll=tri_fig(fall, TT, 'base'))
    ROWS.append(row)
    log(f'{label:70s} dims {row["dims"]:4d} tune {t:.3f} held16 {h16:.3f} heldAll {hall:.3f} | 16: all {row["all16"]:.3f} shape {row["shape16"]:.3f} base {row["base16"]:.3f} '
        f'| all: all {row["allAll"]:.3f} shape {row["shapeAll"]:.3f} base {row["baseAll"]:.3f}  ({time.time() - T0:.0f}s, load {os.getloadavg()[0]:.1f})')
    return row


# ---- fitting helpers (musicnn_study.py, shared with musicnn-variants.py)
def recipe(tr, w=0.6, km=100, Mx=None):
    return study.recipe_v1(M if Mx is None else Mx, D, tr, w, km)


wccn = functools.partial(study.wccn, groups=groups)
lda = functools.partial(study.lda, groups=groups)


DROWS = []


def disjoint(label, make):
    """group-disjoint figures of make(train_indices) -> vectors of all tracks (see module docs)."""
    t0 = time.time()
    # matched triples (all groups): fit on the tuning tracks of the other groups
    ft, fh = [], []
    for x in MALL:
        Vn = unit(make(idx(tune & ~np.isin(groups, x['s']))))
        ft.append(p5(Vn, x['tq'], x['tq']))
        fh.append(p5(Vn, x['q'], x['pool']))
    # matched triples of the 16 old groups: fit on every other group (the other 13 old + the new ones)
    gt, gh = [], []
    for x in M16:
        Vn = unit(make(idx(tune & ~np.isin(groups, x['s']))))
        gt.append(p5(Vn, x['tq'], x['tq']))
        gh.append(p5(Vn, x['q'], x['pool']))
    # 5 folds of groups, evaluated inside the fold
    fold = {g: i % 5 for i, g in enumerate(glist)}
    fo = np.array([fold[g] for g in groups])
    th, hq, per = [], [], {}
    for k in range(5):
        Vn = unit(make(idx(tune & (fo != k))))
        th += list(hits(Vn, idx(tune & (fo == k)), idx(tune & (fo == k)))[1])
        q, h = hits(Vn, idx(held & (fo == k)), idx(fo == k))
        hq += list(h)
        for g in set(groups[q]):
            per[g] = float(h[groups[q] == g].mean())
    # leave one group out, held-out queries against the whole corpus
    lq = []
    for g in qgroups:
        Vn = unit(make(idx(tune & (groups != g))))
        lq += list(hits(Vn, idx(held & (groups == g)), np.arange(N))[1])
    row = dict(label=label, shapeT=tri_fig(ft, MALL, 'shape'), baseT=tri_fig(ft, MALL, 'base'), shapeH=tri_fig(fh, MALL, 'shape'), baseH=tri_fig(fh, MALL, 'base'),
               shape16T=tri_fig(gt, M16, 'shape'), base16T=tri_fig(gt, M16, 'base'), shape16H=tri_fig(gh, M16, 'shape'), base16H=tri_fig(gh, M16, 'base'),
               foldT=float(np.mean(th)), foldH=float(np.mean(hq)), logo=float(np.mean(lq)), per=per)
    DROWS.append(row)
    log(f'[disjoint] {label:60s} all-group triples tune shape {row["shapeT"]:.3f} base {row["baseT"]:.3f} | held shape {row["shapeH"]:.3f} base {row["baseH"]:.3f} '
        f'|| 16-group triples tune {row["shape16T"]:.3f}/{row["base16T"]:.3f} held {row["shape16H"]:.3f}/{row["base16H"]:.3f} '
        f'|| folds tune {row["foldT"]:.3f} held {row["foldH"]:.3f} || LOGO held {row["logo"]:.3f}  ({time.time() - t0:.0f}s, load {os.getloadavg()[0]:.1f})')
    return row


# ---- pooling variants
def pooled(kind, arg=None):
    out = []
    for P, L in zip(PAT, LEV):
        if kind == 'gem':  # generalised mean of the rectified values (penultimate values can be negative)
            X = np.maximum(P, 0)
            out.append(np.mean(X ** arg, 0) ** (1 / arg))
        elif kind == 'lse':  # log-mean-exp pooling, r -> 0 is the mean, r -> inf the max; works with negative values
            r = arg
            mx = P.max(0)
            out.append(mx + np.log(np.mean(np.exp(r * (P - mx)), 0)) / r)
        elif kind == 'skip-abs':  # drop patches whose mean log-mel is below arg (keep at least the loudest)
            keep = L >= arg
            if not keep.any():
                keep = L == L.max()
            out.append(P[keep].mean(0))
        elif kind == 'skip-rel':  # drop patches below arg x the track's median level
            keep = L >= arg * np.median(L)
            if not keep.any():
                keep = L == L.max()
            out.append(P[keep].mean(0))
    return np.array(out)


def markdown():
    f = lambda x: '' if x != x else f'{x:.3f}'
    log('\n| variant | dims | P@5 tuning | held-out 16 groups | held-out all groups | 16: shape | 16: baseline | all: 3 groups | all: shape | all: baseline |')
    log('|---|---|---|---|---|---|---|---|---|---|')
    for r in ROWS:
        log(f'| {r["label"]} | {r["dims"]} | {f(r["tune"])} | {f(r["held16"])} | **{f(r["heldAll"])}** | {f(r["shape16"])} | {f(r["base16"])} | {f(r["allAll"])} | {f(r["shapeAll"])} | {f(r["baseAll"])} |')
    log('\n| unseen soundtracks (group-disjoint) | all-group triples tuning: shape / baseline | held-out: shape | held-out: baseline | 16-group triples tuning: shape / baseline | held-out: shape / baseline | folds: tuning | folds: held-out | LOGO held-out |')
    log('|---|---|---|---|---|---|---|---|---|')
    for r in DROWS:
        log(f'| {r["label"]} | {f(r["shapeT"])} / {f(r["baseT"])} | **{f(r["shapeH"])}** | **{f(r["baseH"])}** | {f(r["shape16T"])} / {f(r["base16T"])} | {f(r["shape16H"])} / {f(r["base16H"])} | {f(r["foldT"])} | {f(r["foldH"])} | {f(r["logo"])} |')
    gl = [g for g in qgroups]
    log('\n| per group (held-out P@5) | ' + ' | '.join(gl) + ' |')
    log('|---|' + '---|' * len(gl))
    for r in ROWS[:3]:
        log(f'| {r["label"]}, all groups | ' + ' | '.join(f'{r["per"].get(g, float("nan")):.2f}' for g in gl) + ' |')
    for r in DROWS:
        log(f'| {r["label"]}, folds | ' + ' | '.join(f'{r["per"].get(g, float("nan")):.2f}' for g in gl) + ' |')


def curve():
    """--curve: fold figures (held-out queries inside each fold of groups) when the projection is fitted on only k of
    the other folds' groups (3 random draws per fold and k, seed 13): does the supervised projection gain on the
    unsupervised recipe as the number of labelled soundtracks grows?"""
    rng = np.random.default_rng(13)
    fold = {g: i % 5 for i, g in enumerate(glist)}
    fo = np.array([fold[g] for g in groups])
    makes = [('v1 recipe (unsupervised)', lambda tr: recipe(tr, 0.6)),
             ('WCCN(M z, lam 0.5) -> PCA100 + D PCA100', lambda tr: fuse(wccn(fit_z(M, tr), tr, 0.5, 100), fit_pca(fit_z(D, tr), tr, 100), 0.6)),
             ('M z -> PCA100 -> WCCN (lam 0.3) + D PCA100', lambda tr: fuse(wccn(fit_pca(fit_z(M, tr), tr, 100), tr, 0.3, None), fit_pca(fit_z(D, tr), tr, 100), 0.6))]
    log('\n| training soundtracks | ' + ' | '.join(f'{m[0]}: folds tuning / held-out' for m in makes) + ' |')
    log('|---|' + '---|' * len(makes))
    for k in [8, 14, 20, 26]:
        res = {m[0]: ([], []) for m in makes}
        for f in range(5):
            others = [g for g in glist if fold[g] != f]
            for _ in range(3):
                pick = list(rng.choice(others, size=min(k, len(others)), replace=False))
                tr = idx(tune & np.isin(groups, pick))
                for lab, make in makes:
                    Vn = unit(make(tr))
                    res[lab][0].extend(hits(Vn, idx(tune & (fo == f)), idx(tune & (fo == f)))[1])
                    res[lab][1].extend(hits(Vn, idx(held & (fo == f)), idx(fo == f))[1])
        log(f'| {k} | ' + ' | '.join(f'{np.mean(res[m[0]][0]):.3f} / {np.mean(res[m[0]][1]):.3f}' for m in makes) + f' |  ({time.time() - T0:.0f}s, load {os.getloadavg()[0]:.1f})')


def new_only():
    """--new-only: 3-group benchmarks among the groups added in session 10 only (none of them shaped the committed v1
    constants), for dsp-v1, the shipped vector and the v1 recipe refitted on all tuning tracks."""
    T = triple_sets([g for g in glist if g not in OLD16])
    for t in T:
        t['shape'] = 0.3 <= t['chance'] <= 0.4 and 90 <= t['n'] <= 150
        t['base'] = abs(t['dsp'] - 0.646) <= 0.05
    log(f'new groups only: {len(T)} triples, shape {sum(t["shape"] for t in T)}, baseline {sum(t["base"] for t in T)}')
    for lab, V in [('dsp-v1', D), ('shipped v1', shipped()), ('v1 recipe refit on grown tuning, w=0.6', recipe(TUNE, 0.6))]:
        Vn = unit(V)
        f = [p5(Vn, t['q'], t['pool']) for t in T]
        log(f'{lab}: all {np.nanmean(f):.3f} shape {tri_fig(f, T, "shape"):.3f} base {tri_fig(f, T, "base"):.3f}; '
            f'held-out queries of the new groups against the new groups {p5(Vn, idx(held & ~old), idx(~old)):.3f}')


def main():
    if '--curve' in sys.argv:
        return curve()
    if '--new-only' in sys.argv:
        return new_only()
    ws = [0.5, 0.6, 0.7]
    evaluate('dsp-v1 (committed constants)', D)
    evaluate('shipped tfjs:musicnn-fusion-v1 (committed constants)', shipped())
    best = max(ws, key=lambda w: p5(unit(recipe(TUNE, w)), TUNE, TUNE))
    evaluate(f'v1 recipe refit on grown tuning, w={best}', recipe(TUNE, best))
    for km in [60, 140]:
        evaluate(f'v1 recipe refit, MusiCNN PCA {km} + dsp PCA {200 - km}, w=0.6', recipe(TUNE, 0.6, km), triples_all=False)
    pools = [('gem', 2), ('gem', 3), ('lse', 0.5), ('lse', 1.0), ('lse', 2.0), ('skip-abs', 0.2), ('skip-abs', 0.5), ('skip-rel', 0.25), ('skip-rel', 0.5)]
    for kind, a in pools:
        Mx = pooled(kind, a)
        frac = '' if not kind.startswith('skip') else f' (patches kept {np.mean([((L >= a) if kind == "skip-abs" else (L >= a * np.median(L))).mean() for L in LEV]):.3f})'
        evaluate(f'pooling {kind} {a}{frac}: shipped constants', shipped(Mx), triples_all=False)
        evaluate(f'pooling {kind} {a}: v1 recipe refit, w=0.6', recipe(TUNE, 0.6, 100, Mx), triples_all=False)
    for lam in [0.3, 0.8]:
        evaluate(f'SEEN: WCCN(M z, lam {lam}) -> PCA100 + D PCA100, w=0.6', fuse(wccn(fit_z(M, TUNE), TUNE, lam, 100), fit_pca(fit_z(D, TUNE), TUNE, 100), 0.6), triples_all=False)
    disjoint('v1 recipe (unsupervised) refit on train groups, w=0.6', lambda tr: recipe(tr, 0.6))
    lams = [0.3, 0.8] if QUICK else [0.1, 0.3, 0.5, 0.8]
    for lam in lams:
        disjoint(f'WCCN(M z, lam {lam}) -> PCA100 + D PCA100, w=0.6', lambda tr: fuse(wccn(fit_z(M, tr), tr, lam, 100), fit_pca(fit_z(D, tr), tr, 100), 0.6))
    for lam in [0.3, 0.8]:
        disjoint(f'WCCN(M z) + WCCN(D z), lam {lam}, PCA 100+100, w=0.6', lambda tr: fuse(wccn(fit_z(M, tr), tr, lam, 100), wccn(fit_z(D, tr), tr, lam, 100), 0.6))
    for lam in [0.3, 0.6, 0.8, 0.9, 0.95]:
        disjoint(f'v1 recipe then WCCN (200x200), lam {lam}', lambda tr: wccn(recipe(tr, 0.6), tr, lam, None))
    for lam in [0.3, 0.6]:
        disjoint(f'M z -> PCA100 -> WCCN (100x100, lam {lam}) + D PCA100, w=0.6', lambda tr: fuse(wccn(fit_pca(fit_z(M, tr), tr, 100), tr, lam, None), fit_pca(fit_z(D, tr), tr, 100), 0.6))
    for lam in [0.3, 0.8]:
        disjoint(f'LDA(St vs Sw, M z, lam {lam}, alpha 1) 100 + D PCA100, w=0.6', lambda tr: fuse(lda(fit_z(M, tr), tr, lam, 100, 1.0), fit_pca(fit_z(D, tr), tr, 100), 0.6))
    json.dump(dict(rows=ROWS, drows=DROWS, groups={g: gsize[g] for g in glist}), open('/tmp/polyphony-audio-bench/musicnn-grown.json', 'w'), indent=1)
    log('per group, held-out queries against the whole grown corpus:')
    for r in ROWS[:3]:
        log(f'  {r["label"]}: ' + ', '.join(f'{g} {p:.2f}' for g, p in r['per'].items()))
    log('per group, folds (group-disjoint, held-out queries inside the fold):')
    for r in DROWS:
        log(f'  {r["label"]}: ' + ', '.join(f'{g} {p:.2f}' for g, p in sorted(r['per'].items())))
    markdown()
    log(f'done in {time.time() - T0:.0f}s, {time.strftime("%H:%M UTC", time.gmtime())}, load {os.getloadavg()[0]:.1f}')


if __name__ == '__main__':
    main()
