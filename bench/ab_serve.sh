#!/usr/bin/env bash
# bench/ab_serve.sh - two brisk binaries serving the same model under the same
# load, measured in the same run: each arm starts `brisk serve`, `brisk bench`
# sends the conversation workload (chat endpoint, greedy, --num-requests at
# --concurrency), and the server stops; arms run A B B A so the host's drift
# falls on both alike. Prints output tok/s, TTFT p50/p95 and TPOT p50 per run
# and keeps each run's `brisk bench` JSON in OUT_DIR.
#
# Usage: bench/ab_serve.sh A_BRISK B_BRISK MODEL OUT_DIR [CONCURRENCY=8] [REQUESTS=32]
#        [THREADS=2] [OUTPUT_LEN=128]
set -euo pipefail
A=$1 B=$2 MODEL=$3 OUT=$4 C=${5:-8} N=${6:-32} T=${7:-2} LEN=${8:-128}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="$ROOT/build/brisk"
PORT=${PORT:-8799}
mkdir -p "$OUT"
round=0
for arm in a b b a; do
  round=$((round + 1))
  bin=$A
  [[ $arm == b ]] && bin=$B
  "$bin" serve --port "$PORT" --threads "$T" --model "$MODEL" >"$OUT/serve-$arm-$round.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.5; done
  "$BENCH" bench --url "http://127.0.0.1:$PORT" --json "$OUT/$arm-$round.json" --label "$arm-$round" \
    --quiet --endpoint chat --temperature 0 --seed 1 --warmup 2 --workload conversation \
    --output-len "$LEN" --output-max "$LEN" --num-requests "$N" --concurrency "$C" >/dev/null
  kill -INT "$pid"
  wait "$pid" || true
  rm -f "$OUT/serve-$arm-$round.log"
done
python3 - "$OUT" "$A" "$B" <<'PY'
import glob, json, statistics, sys
out, a, b = sys.argv[1:]
med = {}
for arm, path in (("a", a), ("b", b)):
    rs = [json.load(open(f))["summary"] for f in sorted(glob.glob(f"{out}/{arm}-*.json"))]
    tps = [r["output_throughput"] for r in rs]
    med[arm] = statistics.median(tps)
    print(f"{arm} ({path}): output tok/s {[round(x, 1) for x in tps]}, "
          f"TTFT p50/p95 ms {[(round(r['ttft_ms']['p50']), round(r['ttft_ms']['p95'])) for r in rs]}, "
          f"TPOT p50 ms {[round(r['tpot_ms']['p50'], 1) for r in rs]}")
print(f"output tok/s B/A: {med['b'] / med['a']:.2f}x")
PY
