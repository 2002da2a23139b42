"""
Shared numpy helpers of the issue-13 retrieval studies (musicnn-variants.py: session 9's 16 soundtracks;
musicnn-grown.py: the grown corpus). Imported by both scripts from this folder (Python puts a script's folder on
sys.path). Nothing here ships: the worker computes the shipped vector in TypeScript (domain/musicnn/embedding.ts),
and `shipped` reproduces it from the committed constants.

Index arguments (`idx`) are arrays of row indices of the tracks a constant is fitted on; `groups` is the array of
soundtrack labels of all rows (within-soundtrack statistics).
"""
import base64
import hashlib
import json
import os
import re

import numpy as np

# The 16 soundtracks of the corpus up to session 9 (corpus.ts SESSION9_GROUPS; BENCH_CORPUS=session9).
SESSION9_GROUPS = ('wesnoth', 'drascula', 'warzone2100', 'nexuiz', 'fretsonfire', 'hedgewars', 'mars', 'asc', 'hyperrogue',
                   'singularity', 'colobot', 'supertux', 'ufoai-crystan', 'ufoai-psymong', 'ufoai-marine', 'planetblupi')

CONSTANTS_TS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'services', 'analysis-worker', 'src', 'domain', 'musicnn', 'embedding-constants.ts')


def held_out(name):
    """corpus.ts isHeldOut: the first byte of sha256(<group>/<name>) is odd."""
    return hashlib.sha256(name.encode()).digest()[0] & 1 == 1


def unit(X):
    """Rows scaled to unit length (zero rows unchanged)."""
    n = np.linalg.norm(X, axis=1, keepdims=True)
    n[n == 0] = 1
    return X / n


def fusion_constants(path=CONSTANTS_TS):
    """The committed constants of tfjs:musicnn-fusion-v1: (json, PCA of the MusiCNN block, PCA of the dsp-v1 block),
    the int8-coded projections dequantised as embedding.ts does."""
    j = json.loads(re.search(r'FusionConstants = (\{.*\});', open(path).read(), re.S).group(1))

    def deq(m):
        b = np.frombuffer(base64.b64decode(m['q']), dtype=np.int8).astype(np.float64).reshape(m['rows'], m['cols'])
        return b / 127 * np.array(m['scale'])[:, None]
    return j, deq(j['pm']), deq(j['pd'])


def fuse(a, b, w):
    """Two blocks at unit length, weights w and 1 - w (embedding.ts)."""
    return np.hstack([w * unit(a), (1 - w) * unit(b)])


def shipped(M, D):
    """The stored vector from MSD+MTT penultimate means M and dsp-v1 vectors D, with the committed constants."""
    j, pm, pd = fusion_constants()
    a = ((M - np.array(j['mMean'])) / np.array(j['mStd'])) @ pm.T
    b = ((D - np.array(j['dMean'])) / np.array(j['dStd'])) @ pd.T
    return fuse(a, b, j['w'])


def fit_z(X, idx):
    """z-score with the mean and std of rows idx (std floored at 1e-6)."""
    m = X[idx].mean(0)
    s = X[idx].std(0)
    s[s < 1e-6] = 1e-6
    return (X - m) / s


def fit_pca(Xz, idx, k):
    """Projection on the top min(k, len(idx) - 1) principal axes of rows idx."""
    mu = Xz[idx].mean(0)
    _, _, Vt = np.linalg.svd(Xz[idx] - mu, full_matrices=False)
    return (Xz - mu) @ Vt[:min(k, len(idx) - 1)].T


def recipe_v1(M, D, idx, w=0.6, km=100):
    """The shipped recipe refitted on idx: z -> PCA km of M, z -> PCA 200 - km of D, unit blocks, weight w."""
    return fuse(fit_pca(fit_z(M, idx), idx, km), fit_pca(fit_z(D, idx), idx, 200 - km), w)


def within_cov(X, idx, *, groups):
    """Within-soundtrack covariance of rows idx (each soundtrack centred on its own mean)."""
    g = groups[idx]
    Xc = X[idx].copy()
    for gg in set(g):
        m = g == gg
        Xc[m] -= Xc[m].mean(0)
    return Xc.T @ Xc / len(idx)


def shrunk(S, lam):
    """(1 - lam) S + lam tr(S)/d I."""
    d = S.shape[0]
    return (1 - lam) * S + lam * np.trace(S) / d * np.eye(d)


def wccn(X, idx, lam, k=None, *, groups):
    """Whitening by the shrunk within-soundtrack covariance of rows idx, then PCA k of them (k None: no PCA)."""
    mu = X[idx].mean(0)
    e, U = np.linalg.eigh(shrunk(within_cov(X, idx, groups=groups), lam))
    Y = (X - mu) @ (U @ np.diag(e ** -0.5) @ U.T)
    return fit_pca(Y, idx, k) if k is not None else Y


def lda(X, idx, lam, k, alpha=1.0, *, groups):
    """Shrinkage LDA: the top k generalised eigenvectors of total vs shrunk within-soundtrack scatter of rows idx,
    scaled by eigenvalue ** (alpha / 2) (alpha 0: whitened)."""
    import scipy.linalg
    mu = X[idx].mean(0)
    Xc = X[idx] - mu
    St = Xc.T @ Xc / len(idx)
    e, V = scipy.linalg.eigh(St, shrunk(within_cov(X, idx, groups=groups), lam))
    o = np.argsort(-e)[:k]
    return (X - mu) @ V[:, o] * (e[o] ** (alpha / 2))
