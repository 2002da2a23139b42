#!/usr/bin/env bash
# Benchmarks: scripts that print figures (speed and memory goals are met here, not in timed tests).
# Usage: bash scripts/bench.sh [name ...]   (no name = the quick set; `all` = everything)
# Run `npm run build` first. Heavy ones (1M vectors / signatures, 500k sweep) take minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A BENCH=(
  [enumerate]="node bench/dist/media-servers/enumerate-100k.js 100000"
  [bus]="node bench/dist/platform/bus.js"
  [embed]="node bench/dist/analysis-worker/timing.js"
  [retrieval]="node bench/dist/analysis-worker/retrieval.js"
  [musicnn-cache]="node bench/dist/analysis-worker/musicnn-cache.js"
  [musicnn-retrieval]="node bench/dist/analysis-worker/musicnn-retrieval.js --cached"
  [musicnn-rss]="node bench/dist/analysis-worker/musicnn-rss.js 500"
  [musicnn-cost]="node bench/dist/analysis-worker/musicnn-cost.js 2 40"
  [musicnn-patch-budget]="node bench/dist/analysis-worker/musicnn-patch-budget.js"
  [musicnn-variants-cache]="node bench/dist/analysis-worker/musicnn-variants-cache.js"
  [musicnn-variants]="env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 bench/src/analysis-worker/musicnn-variants.py"
  [musicnn-grown]="env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 bench/src/analysis-worker/musicnn-grown.py"
  [musicnn-int8-calibrate]="node bench/dist/analysis-worker/musicnn-int8-calibrate.js 4"
  [musicnn-int8-accuracy]="node bench/dist/analysis-worker/musicnn-int8-accuracy.js"
  [reference-vector]="node bench/dist/analysis-worker/reference-vector-cost.js 3"
  [identity-calibration]="node bench/dist/analysis-worker/identity-calibration.js"
  [identity-1m]="node --expose-gc bench/dist/catalogue-identity/identity-1m.js"
  [identity-store]="node --expose-gc bench/dist/catalogue-identity/store-bench.js resolve 100000"
  [ivf-1m]="node --max-old-space-size=4096 bench/dist/vector-engine/ivf-1m.js"
  [index-rebuild]="node bench/dist/index/rebuild-100k.js"
  [ivf-modes]="node bench/dist/vector-engine/ivf-modes.js 1000000 200 float,int8,pq 2"
  [coarse-catalogue-200k]="node --max-old-space-size=4096 bench/dist/vector-engine/coarse-quantiser.js 200000 catalogue"
  [coarse-mixture-200k]="node --max-old-space-size=4096 bench/dist/vector-engine/coarse-quantiser.js 200000 mixture"
  [coarse-catalogue-1m]="node --max-old-space-size=4096 bench/dist/vector-engine/coarse-quantiser.js 1000000 catalogue"
  [coarse-mixture-1m]="node --max-old-space-size=4096 bench/dist/vector-engine/coarse-quantiser.js 1000000 mixture"
  [recall-decomposition-1m]="node --max-old-space-size=6144 bench/dist/vector-engine/recall-decomposition.js 1000000 500 32,64,96,128"
  [ivf-kernels]="node bench/dist/vector-engine/simd-kernels.js"
  [index-throughput]="node bench/dist/index-throughput.js 100000 10 16 int8"
  [gateway-similar]="node bench/dist/gateway-similar.js"
  [default-1m]="env TP_JEMALLOC=1 TP_REPLICA_ARGS=--expose-gc FAKE_PEERS_LEARNED=1 TP_SCENARIOS=similar10 TP_REPLICAS=1,2 TP_SERIAL=10 TP_RECALL=100 TP_MEMORY_AFTER=1 TP_ROLLING=0 TP_GOALS=1 node bench/dist/index-throughput.js 1000000 10 16 int8"
  [replica-memory]="env FAKE_PEERS_LEARNED=1 node bench/dist/index/replica-memory.js 1000000 build,load"
  [replica-memory-200k]="env FAKE_PEERS_LEARNED=1 RM_DROP=1 node bench/dist/index/replica-memory.js 200000 build,load"
  [text-search-1m]="node --max-old-space-size=4096 bench/dist/index/text-search-1m.js 1000000 3"
  [incremental-recall]="node --max-old-space-size=4096 bench/dist/index/incremental-recall.js 100000 200"
  [text-eval]="node bench/dist/index/text-search-eval.js"
  [hyperbolic-radius]="node bench/dist/index/hyperbolic-radius.js"
  [hyperbolic-scale]="node bench/dist/index/hyperbolic-scale.js 100000"
  [album-quality]="node bench/dist/index/album-quality.js 20"
  [text-eval-corpus]="node bench/dist/standalone/text-eval-corpus.js ${TEXT_EVAL_CACHE:-/tmp/polyphony-audio-bench/musicnn-8-pooled}"
  [steering-eval]="node bench/dist/standalone/steering-eval.js"
  [kmeans]="node bench/dist/playlist/kmeans.js"
  [fakes]="node bench/dist/testkit/fakes-100k.js 100000"
  [recording-search]="node bench/dist/landmarks/recording-search.js --queries 30 --scale 100000"
  [postings-build]="node --expose-gc bench/dist/landmarks/postings-build.js 100000 file"
  [postings-build-memory]="node --expose-gc bench/dist/landmarks/postings-build.js 100000 memory"
  [restore-drill]="node bench/dist/ops/restore-drill.js 100000 200"
  [soak]="node bench/dist/ops/soak.js 120 4 10"
  [sweep-500k]="node --expose-gc bench/dist/catalogue-identity/sweep-500k.js"
  [traffic-faults]="node bench/dist/ops/traffic-faults.js 400 16 5 5"
  [heap-guard-replica]="node bench/dist/ops/heap-guard-replica.js 96 2000 17000"
  [browse-1m]="node bench/dist/catalogue-identity/browse-1m.js 1000000"
  [import-reference]="node bench/dist/ops/import-reference.js 10000,50000"
  [live-library]="node bench/dist/standalone/live-library.js 3 30 10 90"
  [live-append]="node --max-old-space-size=4096 bench/dist/index/live-append.js 200000 100 10 int8"
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
