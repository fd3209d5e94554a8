#!/usr/bin/env bash
# bench/compare_llamacpp.sh - serving benchmark, Brisk vs llama.cpp: runs
# llama.cpp's llama-server and `brisk serve` one after the other in the same
# run, on the same GGUF, threads and context, and loads each with `brisk bench`
# over a sweep of open-loop (Poisson) request rates.
#
# Usage: bench/compare_llamacpp.sh [MODEL]     (default models/SmolLM2-135M-Instruct.Q4_1.gguf)
# Env (defaults in brackets):
#   RATES ["0.5 1 2 4"]       request rates, req/s
#   NUM_REQUESTS [40] WARMUP [2] SEED [0]   each rate uses seed SEED+k (k = its place in
#                             RATES): fresh prompts per rate, so no server answers a rate
#                             from its prompt cache of the previous one; both servers get
#                             the same prompts
#   WORKLOAD [random] INPUT_LEN [128] OUTPUT_LEN [64]   every request asks for
#                             OUTPUT_LEN tokens with ignore_eos, so both engines do equal work
#   SLO ["ttft=650ms,tpot=50ms"]  goodput objectives (brisk bench --slo)
#   THREADS [2] CTX [4096] SLOTS [8]   llama-server: -t/-tb THREADS -c CTX -np SLOTS -kvu
#                             (one KV pool shared by the slots, like Brisk's paged pool);
#                             brisk serve: --threads THREADS --max-context-tokens CTX
#                             --max-concurrent SLOTS (same parallelism; Brisk's KV pool
#                             is its default 512 MiB, llama-server's is CTX tokens)
#   SERVERS ["llama-server brisk"]  which servers, in this order
#   BRISK_BIN [build/brisk]  BRISK_SERVE_ARGS [""]  LLAMA_SERVER_ARGS [""]  BENCH_ARGS [""]
#   OUT [bench/results/serve]    JSON results, charts, server logs
#   BENCHMARKS_MD [BENCHMARKS.md]  the section between the serve-bench markers is
#                             replaced (appended if absent); empty = leave it alone
#   BENCH_TIMEOUT_S [1800]   bound on one `brisk bench` run
#   QUIET_LOAD, QUIET_WAIT_S  as in bench/llamacpp/run_llamacpp.sh: wait for a quiet machine
#
# Needs: bench/llamacpp/build.sh (builds llama-server from the llama-cpp-python
# sdist on first use, cached in ~/.cache/brisk), a built `brisk`, python3 with
# matplotlib for the charts (requirements-test.txt).
# Do not run while builds or other benchmarks use the cores.
#
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
cd "$REPO"

MODEL="${1:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
RATES="${RATES:-0.5 1 2 4}"
NUM_REQUESTS="${NUM_REQUESTS:-40}"
WARMUP="${WARMUP:-2}"
SEED="${SEED:-0}"
WORKLOAD="${WORKLOAD:-random}"
INPUT_LEN="${INPUT_LEN:-128}"
OUTPUT_LEN="${OUTPUT_LEN:-64}"
SLO="${SLO:-ttft=650ms,tpot=50ms}"
THREADS="${THREADS:-2}"
CTX="${CTX:-4096}"
SLOTS="${SLOTS:-8}"
SERVERS="${SERVERS:-llama-server brisk}"
BRISK_BIN="${BRISK_BIN:-build/brisk}"
BRISK_SERVE_ARGS="${BRISK_SERVE_ARGS:-}"
LLAMA_SERVER_ARGS="${LLAMA_SERVER_ARGS:-}"
BENCH_ARGS="${BENCH_ARGS:-}"
OUT="${OUT:-bench/results/serve}"
BENCHMARKS_MD="${BENCHMARKS_MD-BENCHMARKS.md}"
BENCH_TIMEOUT_S="${BENCH_TIMEOUT_S:-1800}"

[[ -f "$MODEL" ]] || { echo "no such model: $MODEL" >&2; exit 1; }
[[ -x "$BRISK_BIN" ]] || { echo "no brisk binary at $BRISK_BIN (cmake --build build)" >&2; exit 1; }
LLAMA_BIN="$("$HERE/llamacpp/build.sh" | tail -1)"
mkdir -p "$OUT/logs"
tag="$(basename "$MODEL" .gguf)-t${THREADS}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Ready when GET /health or /v1/models answers 200; fails if the server exits.
wait_ready() {
  local port=$1 pid=$2 deadline=$(( $(date +%s) + 180 ))
  while (( $(date +%s) < deadline )); do
    kill -0 "$pid" 2>/dev/null || return 1
    python3 - "$port" <<'PY' && return 0
import sys, urllib.request
port = sys.argv[1]
for path in ("/health", "/v1/models"):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
sys.exit(1)
PY
    sleep 1
  done
  return 1
}

wait_quiet() {
  [[ -n "${QUIET_LOAD:-}" ]] || return 0
  local deadline=$(( $(date +%s) + ${QUIET_WAIT_S:-1800} ))
  while (( $(date +%s) < deadline )); do
    awk -v t="$QUIET_LOAD" '{exit !($1 < t)}' /proc/loadavg && return 0
    sleep 10
  done
  echo "warning: loadavg still $(cut -d' ' -f1 /proc/loadavg); running anyway" >&2
}

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

start_llama_server() {  # port log
  # shellcheck disable=SC2086
  "$LLAMA_BIN/llama-server" -m "$MODEL" -t "$THREADS" -tb "$THREADS" -c "$CTX" -np "$SLOTS" \
    -kvu --host 127.0.0.1 --port "$1" --no-webui $LLAMA_SERVER_ARGS >"$2" 2>&1 &
  SERVER_PID=$!
}

start_brisk() {  # port log
  # shellcheck disable=SC2086
  "$BRISK_BIN" serve --model "$MODEL" --threads "$THREADS" --max-context-tokens "$CTX" \
    --max-concurrent "$SLOTS" --port "$1" $BRISK_SERVE_ARGS >"$2" 2>&1 &
  SERVER_PID=$!
}

wait_quiet
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
results=()
for server in $SERVERS; do
  port="$(free_port)"
  log="$OUT/logs/$server-$tag.log"
  case "$server" in
    llama-server) start_llama_server "$port" "$log" ;;
    brisk) start_brisk "$port" "$log" ;;
    *) echo "unknown server $server (llama-server or brisk)" >&2; exit 1 ;;
  esac
  if ! wait_ready "$port" "$SERVER_PID"; then
    echo "$server did not become ready; last lines of $log:" >&2
    tail -20 "$log" >&2
    stop_server
    exit 1
  fi
  echo "$server ready on port $port (log: $log)" >&2
  k=0
  for rate in $RATES; do
    seed=$((SEED + k)); k=$((k + 1))
    json="$OUT/$server-$tag-rate$rate.json"
    echo "$server: rate $rate req/s, $NUM_REQUESTS requests" >&2
    # shellcheck disable=SC2086
    timeout "$BENCH_TIMEOUT_S" "$BRISK_BIN" bench --url "http://127.0.0.1:$port" \
      --request-rate "$rate" -n "$NUM_REQUESTS" --warmup "$WARMUP" --seed "$seed" \
      --workload "$WORKLOAD" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --ignore-eos \
      --slo "$SLO" --label "$server" --json "$json" --quiet $BENCH_ARGS \
      >"$OUT/logs/$server-$tag-rate$rate.txt" || {
        rc=$?
        # 1 = no request succeeded: still a result (goodput 0) if the JSON exists.
        [[ $rc -eq 1 && -f "$json" ]] || { echo "brisk bench failed ($rc)" >&2; exit 1; }
      }
    results+=("$json")
  done
  stop_server
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

charts="$OUT/charts-$tag"
table="$OUT/table-$tag.md"
title="$(basename "$MODEL"), $THREADS threads, ctx $CTX, in $INPUT_LEN / out $OUTPUT_LEN tokens"
python3 "$HERE/plot_bench.py" "${results[@]}" --markdown "$table" -o "$charts" --title "$title" >&2 \
  || python3 "$HERE/plot_bench.py" "${results[@]}" --markdown "$table"  # no matplotlib: table only

section="$OUT/section-$tag.md"
{
  echo "## Serving: Brisk vs llama-server under load (brisk bench)"
  echo
  echo "Command: \`bench/compare_llamacpp.sh $MODEL\` with RATES=\"$RATES\" NUM_REQUESTS=$NUM_REQUESTS"
  echo "WARMUP=$WARMUP WORKLOAD=$WORKLOAD INPUT_LEN=$INPUT_LEN OUTPUT_LEN=$OUTPUT_LEN (ignore_eos)"
  echo "THREADS=$THREADS CTX=$CTX SLOTS=$SLOTS SLO=\"$SLO\", servers run one after the other."
  echo "Open loop, Poisson arrivals; metrics as vLLM's benchmark_serving (TPOT excludes the"
  echo "first token; goodput = requests/s meeting every SLO)."
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), brisk $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "- llama.cpp: $(head -1 "$LLAMA_BIN/../BUILD_INFO" 2>/dev/null || echo '?')"
  echo "- loadavg before: $load_before, after: $load_after"
  echo
  cat "$table"
  if [[ -d "$charts" ]]; then
    for png in "$charts"/*.png; do
      [[ -f "$png" ]] && echo "![$(basename "$png" .png)]($png)"
    done
  fi
} > "$section"

if [[ -n "$BENCHMARKS_MD" ]]; then
  python3 - "$BENCHMARKS_MD" "$section" <<'PY'
import os, sys
md, section = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
begin, end = "<!-- serve-bench:begin -->", "<!-- serve-bench:end -->"
text = open(md).read() if os.path.exists(md) else ""
block = f"{begin}\n{section}\n{end}"
if begin in text and end in text:
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
else:
    text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
open(md, "w").write(text)
PY
  echo "updated $BENCHMARKS_MD" >&2
fi
cat "$section"
