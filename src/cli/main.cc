// brisk: one binary, subcommands.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"

namespace brisk {

std::string DefaultModelPath() {
  if (const char* env = std::getenv("BRISK_MODEL"); env && *env) return env;
  const char* kName = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (std::filesystem::exists(kName)) return kName;
  return BRISK_DEFAULT_MODEL;
}

}  // namespace brisk

int main(int argc, char** argv) {
  CLI::App app{"brisk: an LLM serving system"};
  app.require_subcommand(1);
  auto serve = brisk::RegisterServe(*app.add_subcommand(
      "serve", "Serve the OpenAI-compatible HTTP API (default model, 127.0.0.1:8000)"));
  auto generate = brisk::RegisterGenerate(
      *app.add_subcommand("generate", "Generate text from a prompt, streamed to stdout"));
  auto bench = brisk::RegisterBenchModel(*app.add_subcommand(
      "bench-model", "Measure prompt processing and generation speed (tokens/s)"));
  auto bench_kv = brisk::RegisterBenchKv(*app.add_subcommand(
      "bench-kv", "Measure KV memory at long context with and without sliding-window paging"));
  auto bench_serve = brisk::RegisterBenchServe(*app.add_subcommand(
      "bench", "Load-test an OpenAI-compatible server (TTFT, TPOT, ITL, goodput)"));
  auto schema = brisk::RegisterSchema(*app.add_subcommand(
      "schema", "Compile, check and benchmark JSON Schemas for structured output"));
  auto gateway = brisk::RegisterGateway(*app.add_subcommand(
      "gateway", "Route OpenAI requests across model tiers and replicas, with a cost ledger"));
  auto canned = brisk::RegisterCannedUpstream(*app.add_subcommand(
      "canned-upstream", "An instant fake OpenAI upstream for gateway overhead benchmarks"));
  auto cost = brisk::RegisterCost(*app.add_subcommand(
      "cost", "Print the gateway's cost ledger per feature (or tier, tenant) per day"));
  auto eval = brisk::RegisterEval(
      *app.add_subcommand("eval",
                          "Check a server against a golden set and its gate (golden), or a model "
                          "configuration's distributions against a reference's (kld)"));
  auto quantize = brisk::RegisterQuantize(*app.add_subcommand(
      "quantize", "Convert a GGUF model's weights to another format (q8_0, q4_k_m, ...)"));
  auto judge = brisk::RegisterJudge(*app.add_subcommand(
      "judge", "Measure the rollout judge on answer pairs with a known better answer"));
  auto rollout = brisk::RegisterRollout(*app.add_subcommand(
      "rollout", "Start, watch, promote or abort a gateway rollout (gate, shadow, canary)"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.got_subcommand("serve")) return serve();
  if (app.got_subcommand("generate")) return generate();
  if (app.got_subcommand("bench-model")) return bench();
  if (app.got_subcommand("bench-kv")) return bench_kv();
  if (app.got_subcommand("bench")) return bench_serve();
  if (app.got_subcommand("schema")) return schema();
  if (app.got_subcommand("gateway")) return gateway();
  if (app.got_subcommand("canned-upstream")) return canned();
  if (app.got_subcommand("cost")) return cost();
  if (app.got_subcommand("eval")) return eval();
  if (app.got_subcommand("quantize")) return quantize();
  if (app.got_subcommand("judge")) return judge();
  if (app.got_subcommand("rollout")) return rollout();
  return 2;
}
