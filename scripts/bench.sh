#!/usr/bin/env bash
# Benchmarks: scripts that print figures (speed and memory goals are met here, not in timed tests).
# Usage: bash scripts/bench.sh [name ...]   (no name = the quick set; `all` = everything)
# Run `npm run build` first. Heavy ones (1M vectors / signatures, 500k sweep) take minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A BENCH=(
  [enumerate]="node shared/media-servers/dist/bench/enumerate-100k.js 100000"
  [bus]="node shared/platform/dist/bus/bus.bench.js"
  [embed]="node services/analysis-worker/dist/bench/timing.js"
  [retrieval]="node services/analysis-worker/dist/bench/retrieval.js"
  [musicnn-cache]="node services/analysis-worker/dist/bench/musicnn-cache.js"
  [musicnn-retrieval]="node services/analysis-worker/dist/bench/musicnn-retrieval.js --cached"
  [musicnn-rss]="node services/analysis-worker/dist/bench/musicnn-rss.js 500"
  [musicnn-cost]="node services/analysis-worker/dist/bench/musicnn-cost.js 2 40"
  [musicnn-patch-budget]="node services/analysis-worker/dist/bench/musicnn-patch-budget.js"
  [musicnn-variants-cache]="node services/analysis-worker/dist/bench/musicnn-variants-cache.js"
  [musicnn-variants]="env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 services/analysis-worker/src/bench/musicnn-variants.py"
  [musicnn-grown]="env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 services/analysis-worker/src/bench/musicnn-grown.py"
  [musicnn-int8-calibrate]="node services/analysis-worker/dist/bench/musicnn-int8-calibrate.js 4"
  [musicnn-int8-accuracy]="node services/analysis-worker/dist/bench/musicnn-int8-accuracy.js"
  [identity-calibration]="node services/analysis-worker/dist/bench/identity-calibration.js"
  [identity-1m]="node --expose-gc services/catalogue-identity/dist/bench/identity-1m.js"
  [identity-store]="node --expose-gc services/catalogue-identity/dist/bench/store-bench.js resolve 100000"
  [ivf-1m]="node --max-old-space-size=4096 bench/dist/vector-engine/ivf-1m.js"
  [index-rebuild]="node bench/dist/index/rebuild-100k.js"
  [ivf-modes]="node bench/dist/vector-engine/ivf-modes.js 1000000 200 float,int8,pq 2"
  [ivf-kernels]="node bench/dist/vector-engine/simd-kernels.js"
  [index-throughput]="node bench/dist/index-throughput.js 100000 10 16 int8"
  [gateway-similar]="node bench/dist/gateway-similar.js"
  [text-eval]="node bench/dist/index/text-search-eval.js"
  [text-eval-corpus]="node infra/standalone/dist/bench/text-eval-corpus.js ${TEXT_EVAL_CACHE:-/tmp/polyphony-audio-bench/musicnn-8-pooled}"
  [kmeans]="node services/playlist/dist/bench/kmeans.js"
  [sweep-500k]="node --expose-gc services/catalogue-identity/dist/bench/sweep-500k.js"
)
QUICK=(enumerate bus embed retrieval kmeans)
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then names=("${QUICK[@]}"); fi
if [[ "${names[0]}" == "all" ]]; then names=("${!BENCH[@]}"); fi
for n in "${names[@]}"; do
  cmd="${BENCH[$n]:-}"
  if [[ -z "$cmd" ]]; then echo "unknown benchmark: $n (known: ${!BENCH[*]})" >&2; exit 2; fi
  echo "=== $n: $cmd"
  $cmd
done
