#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "engine/engine.h"
#include "model/model.h"
#include "model/prompt_renderer.h"
#include "model/tokenizer.h"

namespace brisk {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string system;
  bool chat = false;
  int max_tokens = 128;
  int threads = 2;
  bool ignore_eos = false;
  bool verbose = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  SamplingParams sampling;
  uint64_t seed = 0;
  bool has_seed = false;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk: error: %s\n", s.ToString().c_str());
  return 1;
}

int RunGenerate(GenerateFlags& f) {
  if (f.threads < 1 || f.threads > 256)
    return Fail(InvalidArgument("--threads must be in [1, 256]"));
  if (f.has_seed) f.sampling.seed = f.seed;
  auto model = Model::Load(f.model);
  if (!model.ok()) return Fail(model.status());
  auto tok = Tokenizer::FromGguf((*model)->file());
  if (!tok.ok()) return Fail(tok.status().WithContext("loading tokenizer"));

  GenerationRequest req;
  if (f.chat) {
    // The prompt renderer: the template's markup makes control tokens, the
    // messages' text never does.
    auto renderer = PromptRenderer::FromGguf((*model)->file(), **tok);
    if (!renderer.ok()) return Fail(renderer.status().WithContext("--chat"));
    if (!(*renderer)->has_chat_template())
      return Fail(InvalidArgument("--chat needs the model's chat template (none in the file)"));
    nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
    if (!f.system.empty()) msgs.push_back({{"role", "system"}, {"content", f.system}});
    msgs.push_back({{"role", "user"}, {"content", f.prompt}});
    auto tokens = (*renderer)->EncodeChat(msgs);
    if (!tokens.ok()) return Fail(tokens.status().WithContext("rendering the chat template"));
    req.prompt = std::move(*tokens);
  } else {
    req.prompt = (*tok)->Encode(f.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  req.sampling = f.sampling;
  req.max_tokens = f.max_tokens;
  req.stop = f.stop;
  req.stop_token_ids = f.stop_token_ids;
  req.ignore_eos = f.ignore_eos;
  const size_t n_prompt = req.prompt.size();

  EngineOptions opts;
  opts.n_threads = f.threads;
  Engine engine(**model, **tok, opts);
  auto id = engine.Add(std::move(req));
  if (!id.ok()) return Fail(id.status());

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Clock::time_point t_first{};
  int n_gen = 0;
  std::vector<SequenceOutput> outs;
  FinishReason reason = FinishReason::kNone;
  while (engine.HasWork()) {
    outs.clear();
    Status s = engine.Step(&outs);
    if (!s.ok()) return Fail(s);
    for (auto& o : outs) {
      if (!o.new_tokens.empty() && n_gen == 0) t_first = Clock::now();
      n_gen += static_cast<int>(o.new_tokens.size());
      std::fwrite(o.text.data(), 1, o.text.size(), stdout);
      std::fflush(stdout);
      if (o.finished) reason = o.reason;
    }
  }
  std::fputc('\n', stdout);
  const auto t1 = Clock::now();
  if (f.verbose) {
    double pp_s = std::chrono::duration<double>(t_first - t0).count();
    double tg_s = std::chrono::duration<double>(t1 - t_first).count();
    std::fprintf(stderr,
                 "[brisk] kernels=%s prompt=%zu tokens in %.1f ms; generated %d tokens, "
                 "%.1f tokens/s; finish=%s\n",
                 ActiveKernelVariant(), n_prompt, pp_s * 1e3, n_gen,
                 n_gen > 1 ? (n_gen - 1) / tg_s : 0.0, FinishReasonName(reason));
  }
  return 0;
}

}  // namespace

CommandRunner RegisterGenerate(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  f->model = DefaultModelPath();
  f->sampling.temperature = 0.8f;
  app.add_option("-m,--model", f->model, "GGUF model file")->capture_default_str();
  app.add_option("-p,--prompt", f->prompt, "Prompt text")->required();
  app.add_flag("--chat", f->chat, "Wrap the prompt in the model's chat template");
  app.add_option("--system", f->system, "System message (with --chat)");
  app.add_option("-n,--max-tokens", f->max_tokens, "Tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-t,--threads", f->threads, "Threads")->capture_default_str();
  app.add_option("--temp,--temperature", f->sampling.temperature, "Temperature (0 = greedy)")
      ->capture_default_str();
  app.add_option("--top-k", f->sampling.top_k, "Top-k (0 = off)");
  app.add_option("--top-p", f->sampling.top_p, "Top-p");
  app.add_option("--min-p", f->sampling.min_p, "Min-p");
  app.add_option("--repeat-penalty", f->sampling.repetition_penalty, "Repetition penalty");
  app.add_option("--frequency-penalty", f->sampling.frequency_penalty, "Frequency penalty");
  app.add_option("--presence-penalty", f->sampling.presence_penalty, "Presence penalty");
  app.add_option("--seed", f->seed, "Random seed")->each([f](const std::string&) {
    f->has_seed = true;
  });
  app.add_option("--stop", f->stop, "Stop string (repeatable)");
  app.add_option("--stop-token", f->stop_token_ids, "Token id that ends generation (repeatable)");
  app.add_flag("--ignore-eos", f->ignore_eos, "Keep generating past end-of-sequence");
  app.add_flag("-v,--verbose", f->verbose, "Print timing to stderr");
  return [f] { return RunGenerate(*f); };
}

}  // namespace brisk
