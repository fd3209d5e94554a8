// The brisk subcommands. Each registers its flags on a CLI11 subcommand and
// returns the process exit code when run.
#pragma once

#include <functional>
#include <string>

#include "util/status.h"

namespace CLI {
class App;
}

namespace brisk {

using CommandRunner = std::function<int()>;

// `brisk serve`: the OpenAI-compatible server.
CommandRunner RegisterServe(CLI::App& app);
// `brisk generate`: stream a completion to stdout.
CommandRunner RegisterGenerate(CLI::App& app);
// `brisk bench-model`: pp/tg tokens/s and batched decode throughput.
CommandRunner RegisterBenchModel(CLI::App& app);
// `brisk bench-kv`: KV memory at long context with and without sliding-window paging.
CommandRunner RegisterBenchKv(CLI::App& app);
// `brisk bench`: load-test an OpenAI-compatible server (src/loadgen/).
CommandRunner RegisterBenchServe(CLI::App& app);
// `brisk schema compile|check|bench`: structured-output grammars without a model run.
CommandRunner RegisterSchema(CLI::App& app);

// `brisk gateway --config gateway.yaml`: tiers, routing, cost ledger (src/gateway/).
CommandRunner RegisterGateway(CLI::App& app);
// `brisk canned-upstream`: an instant fake OpenAI upstream, for measuring the
// gateway's own overhead (bench/gateway_overhead.py). Does no inference.
CommandRunner RegisterCannedUpstream(CLI::App& app);
// `brisk cost`: the cost ledger's per-feature daily table (or JSON).
CommandRunner RegisterCost(CLI::App& app);
// `brisk eval golden`: a golden set against a server, with its gate (src/eval/).
CommandRunner RegisterEval(CLI::App& app);
// `brisk judge --url URL --pairs FILE`: the rollout judge's agreement with
// pairs whose better answer is known (gateway/judge.h).
CommandRunner RegisterJudge(CLI::App& app);
// `brisk rollout start|status|promote|abort|audit`: the gateway's rollouts
// through its admin API (gateway/rollout_manager.h).
CommandRunner RegisterRollout(CLI::App& app);
// `brisk quantize IN OUT --type T`: convert a GGUF model's weight formats.
CommandRunner RegisterQuantize(CLI::App& app);
// `brisk eval kld` (a subcommand of `eval`): distribution check against a
// saved reference (src/eval/kld_*.h). Its runner returns -1 when not chosen.
CommandRunner RegisterEvalKld(CLI::App& eval_app);

// Writes `text` to `path` (report files of the eval commands).
Status WriteTextFile(const std::string& path, const std::string& text);

// The default model path: $BRISK_MODEL, else ./models/<default>, else the
// build tree's models/ directory.
std::string DefaultModelPath();
// The evaluation text the project installs (bench/golden/kld_text.txt: in
// the working directory, else in the source tree); `brisk eval kld` and the
// gate's distribution check read it unless told otherwise.
std::string DefaultKldTextPath();

}  // namespace brisk
