#!/usr/bin/env bash
# bench/llamacpp/run_llamacpp.sh - llama.cpp baseline numbers for Brisk.
#
# Usage: bench/llamacpp/run_llamacpp.sh MODEL THREADS
#   e.g. bench/llamacpp/run_llamacpp.sh models/SmolLM2-135M-Instruct.Q4_1.gguf 2
# Env:   FA_LIST="off on"   flash-attention settings for llama-batched-bench (default both)
#        NPL=1,4,16,32      parallel sequence counts for llama-batched-bench
#        REPS=3             llama-bench repetitions
#        SKIP_BENCH=1 / SKIP_BATCHED=1   run only one of the two tools
#        QUIET_LOAD=0.5 QUIET_WAIT_S=1800  before each tool run, wait (at most
#                           QUIET_WAIT_S) until the 1-min loadavg is below QUIET_LOAD
#
# Runs (binaries from bench/llamacpp/build.sh, built on first use):
#   llama-bench          -m MODEL -t THREADS -p 512 -n 128 -r 3 -fa 0,1 -o json
#     -> pp512 (prompt tokens/s, one 512-token batch) and tg128 (decode tokens/s,
#        one sequence), each with flash attention off and on
#   llama-batched-bench  -m MODEL -t THREADS -tb THREADS -fa {off,on} -npp 128 -ntg 128
#                        -npl 1,4,16,32 -c 16384 --output-format jsonl
#     -> per B = number of parallel sequences: speed_pp (prefill t/s over all B
#        prompts, prompts not shared) and speed_tg (aggregate decode t/s over B)
# and writes bench/results/llamacpp-<model>-t<THREADS>.json:
#   {"model":..., "threads":..., "llama_bench":[...rows...],
#    "batched_bench":{"off":[...jsonl rows...], "on":[...]}, "build_info":"..."}
# plus the raw outputs next to it (.llama-bench.json, .batched-<fa>.jsonl, .log).
# Each tool run is bounded by `timeout` (TIMEOUT_S, default 900 s).
# Do not run while a build or another benchmark is using the cores.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MODEL="${1:?usage: $0 MODEL THREADS}"
THREADS="${2:?usage: $0 MODEL THREADS}"
FA_LIST="${FA_LIST:-off on}"
NPL="${NPL:-1,4,16,32}"
REPS="${REPS:-3}"
TIMEOUT_S="${TIMEOUT_S:-900}"
[[ -f "$MODEL" ]] || { echo "no such model: $MODEL" >&2; exit 1; }

BIN="$("$HERE/build.sh" | tail -1)"
RES="$REPO/bench/results"
mkdir -p "$RES"
tag="$(basename "$MODEL" .gguf)"
base="$RES/llamacpp-${tag}-t${THREADS}"
log="$base.log"
: > "$log"
wait_quiet() {  # optional: wait for other work on the machine to finish
  [[ -n "${QUIET_LOAD:-}" ]] || return 0
  local deadline=$(( $(date +%s) + ${QUIET_WAIT_S:-1800} ))
  while (( $(date +%s) < deadline )); do
    awk -v t="$QUIET_LOAD" '{exit !($1 < t)}' /proc/loadavg && return 0
    sleep 10
  done
  echo "warning: loadavg still $(cut -d' ' -f1 /proc/loadavg) >= $QUIET_LOAD; running anyway" >&2
}
wait_quiet
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

if [[ -z "${SKIP_BENCH:-}" ]]; then
  echo "llama-bench $tag t=$THREADS" >&2
  timeout "$TIMEOUT_S" "$BIN/llama-bench" -m "$MODEL" -t "$THREADS" -p 512 -n 128 -r "$REPS" \
    -fa 0,1 -o json >"$base.llama-bench.json.tmp" 2>>"$log"
  mv "$base.llama-bench.json.tmp" "$base.llama-bench.json"
fi

if [[ -z "${SKIP_BATCHED:-}" ]]; then
  for fa in $FA_LIST; do
    wait_quiet
    echo "llama-batched-bench $tag t=$THREADS fa=$fa npl=$NPL" >&2
    timeout "$TIMEOUT_S" "$BIN/llama-batched-bench" -m "$MODEL" -t "$THREADS" -tb "$THREADS" \
      -fa "$fa" -npp 128 -ntg 128 -npl "$NPL" -c 16384 --output-format jsonl \
      >"$base.batched-$fa.jsonl.tmp" 2>>"$log"
    # keep only the JSON lines (the tool may print a table or notes on stdout)
    grep '^{' "$base.batched-$fa.jsonl.tmp" >"$base.batched-$fa.jsonl" || true
    rm -f "$base.batched-$fa.jsonl.tmp"
  done
fi

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$base" "$MODEL" "$THREADS" "$BIN" "$FA_LIST" "$load_before" "$load_after" <<'EOF'
import json, os, sys, datetime
base, model, threads, bindir, fa_list, load_before, load_after = sys.argv[1:8]
out = {"model": os.path.basename(model), "threads": int(threads),
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       # other work on the machine skews results (2 cores): loadavg 1/5/15 min before and after
       "loadavg_before": load_before, "loadavg_after": load_after,
       "llama_bench": [], "batched_bench": {}, "summary": {}}
try:
    out["build_info"] = open(os.path.join(os.path.dirname(bindir), "BUILD_INFO")).read()
except OSError:
    pass
p = base + ".llama-bench.json"
if os.path.exists(p):
    rows = json.load(open(p))
    out["llama_bench"] = rows
    for r in rows:
        test = f"pp{r['n_prompt']}" if r.get("n_prompt") else f"tg{r['n_gen']}"
        fa = r.get("flash_attn")
        out["summary"][f"{test}_fa{fa}"] = round(r["avg_ts"], 2)  # fa: 0 off, 1 on, -1 auto
        # best repetition: less sensitive to other work on a shared machine
        if r.get("samples_ts"):
            out["summary"][f"{test}_fa{fa}_best"] = round(max(r["samples_ts"]), 2)
for fa in fa_list.split():
    p = f"{base}.batched-{fa}.jsonl"
    if os.path.exists(p):
        rows = [json.loads(l) for l in open(p) if l.strip()]
        out["batched_bench"][fa] = rows
        for r in rows:
            out["summary"][f"batched_fa{fa}_B{r['pl']}_tg"] = round(r["speed_tg"], 2)
            out["summary"][f"batched_fa{fa}_B{r['pl']}_pp"] = round(r["speed_pp"], 2)
json.dump(out, open(base + ".json", "w"), indent=1)
print(json.dumps({"file": base + ".json", **out["summary"]}, indent=1))
EOF
