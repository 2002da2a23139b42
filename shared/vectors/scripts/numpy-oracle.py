"""Writes src/__fixtures__/numpy-oracle.json: reference values computed by numpy for the unit tests of
@polyphony/vectors (cosine distance, L2 normalisation, one Lloyd step of k-means).

Run from shared/vectors: python3 scripts/numpy-oracle.py  (numpy >= 1.20). The vectors come from a
fixed seed, so the file only changes when this script does.
"""
import json
import numpy as np

rng = np.random.default_rng(20261125)
out = {"numpy": np.__version__, "cosine": [], "normalise": [], "lloyd": None}

for dim in (1, 2, 3, 7, 8, 9, 16, 200):
    for scale in (1e-3, 1.0, 1e3):
        a = (rng.standard_normal(dim) * scale).astype(np.float32)
        b = (rng.standard_normal(dim) * scale).astype(np.float32)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        d = 1.0 - float(a64 @ b64) / float(np.sqrt((a64 @ a64) * (b64 @ b64)))
        out["cosine"].append({"a": a.tolist(), "b": b.tolist(), "distance": d, "dot": float(a64 @ b64)})
        n = float(np.linalg.norm(a64))
        out["normalise"].append({"v": a.tolist(), "norm": n, "unit": (a64 / n).astype(np.float32).tolist()})

# Lloyd's algorithm from given starting centroids (what kmeans() does after seeding): assign every point
# to its nearest centroid by squared Euclidean distance (lowest index on ties), move every centroid to the
# mean of its points; "one" is the state after one move, "converged" after the assignment stops changing.
points = rng.standard_normal((60, 5)).astype(np.float32)
start = points[[0, 20, 40]].copy()


def assign_to(centroids):
    d2 = ((points[:, None, :].astype(np.float64) - centroids[None, :, :].astype(np.float64)) ** 2).sum(axis=2)
    return d2.argmin(axis=1), float(d2.min(axis=1).sum())


def move(assign):
    return np.stack([points[assign == c].astype(np.float64).mean(axis=0) for c in range(3)]).astype(np.float32)


a0, _ = assign_to(start)
one = move(a0)
a1, inertia1 = assign_to(one)
centroids, assign, iterations = start, None, 0
while True:
    nxt, inertia = assign_to(centroids)
    iterations += 1
    if assign is not None and (nxt == assign).all():
        break
    assign = nxt
    centroids = move(assign)
out["lloyd"] = {
    "points": points.tolist(),
    "start": start.tolist(),
    "one": {"centroids": one.tolist(), "assign": a1.tolist(), "inertia": inertia1},
    "converged": {"centroids": centroids.tolist(), "assign": assign.tolist(), "inertia": inertia, "iterations": iterations},
}

with open("src/__fixtures__/numpy-oracle.json", "w") as f:
    json.dump(out, f)
    f.write("\n")
