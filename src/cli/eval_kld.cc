// `brisk eval kld`: the distribution check of a model configuration (weight
// precision, file) against a reference configuration on the same text, as
// llama-perplexity --kl-divergence-base / --kl-divergence do it:
//   brisk eval kld --model ref.gguf --precision f32 [--text T] --save-base B
//   brisk eval kld --model test.gguf [--precision P] --base B [--max-kld X]
// The first run scores the text under the reference and keeps its
// distributions (and prints its perplexity); each later run scores the same
// chunks under the configuration tested and reports KLD, same-top-1,
// perplexity ratio and Δp (src/eval/kld_stats.h). Exit 0, or 1 when a
// threshold given on the command line is not met, 2 on an error.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "eval/kld_base.h"
#include "eval/kld_gate.h"
#include "eval/kld_run.h"
#include "eval/kld_stats.h"
#include "model/model.h"

namespace brisk {
namespace {

struct KldFlags {
  std::string model;
  std::string precision = "native";
  std::string kv_precision = "f16";
  KvType kv_type = KvType::kF16;  // kv_precision, parsed
  std::string text;
  std::string save_base;
  std::string base;
  int ctx = 512;
  int chunks = 0;
  int threads = 2;
  std::string json_out;
  std::string markdown_out;
  double max_kld = -1;
  double min_same_top1 = -1;
  double max_ln_ppl_ratio = -1;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk eval kld: %s\n", s.message().c_str());
  return 2;
}

// One line per chunk on stderr; rewritten in place on a terminal.
class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  void Chunk(int c) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = s / (c + 1) * (total_ - c - 1);
    std::fprintf(stderr, "%schunk %d/%d  %.1f s  eta %.0f s%s", tty_ ? "\r" : "", c + 1, total_, s,
                 eta, tty_ && c + 1 < total_ ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  int total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

Expected<std::unique_ptr<Model>> LoadModel(const KldFlags& f) {
  ASSIGN_OR_RETURN(LoadPrecision p, LoadPrecisionType(f.precision));
  LoadOptions o;
  o.precision = p;
  return Model::Load(f.model, o);
}

std::string Description(const KldFlags& f) {
  return nlohmann::json{
      {"model", f.model}, {"precision", f.precision}, {"kv_precision", f.kv_precision}}
      .dump();
}

int SaveBase(const KldFlags& f, Model& model) {
  auto chunks = eval::ChunkTextFile(model.file(), f.text, f.ctx, f.chunks);
  if (!chunks.ok()) return Fail(chunks.status());
  eval::KldBaseHeader h{model.config().vocab, Description(f), std::move(*chunks)};
  auto writer = eval::KldBaseWriter::Create(f.save_base, h);
  if (!writer.ok()) return Fail(writer.status());
  std::fprintf(stderr, "brisk eval kld: reference %s (%s), %d chunks of %d tokens, %lld scored\n",
               f.model.c_str(), (f.precision + ", KV " + f.kv_precision).c_str(), h.chunks.n_chunks,
               h.chunks.n_ctx, static_cast<long long>(h.chunks.scored()));
  ThreadPool pool(f.threads);
  Progress progress(h.chunks.n_chunks);
  std::vector<float> lp(static_cast<size_t>(h.vocab));
  double nll = 0;
  Status st = eval::ScoreChunks(
      model, pool, h.chunks,
      [&](int c, int j, const float* logits) {
        eval::LogSoftmax(logits, h.vocab, lp.data());
        nll -= lp[h.chunks.next_token(c, j)];
        return (*writer)->Append(lp.data());
      },
      [&](int c) { progress.Chunk(c); }, f.kv_type);
  if (st.ok()) st = (*writer)->Finish();
  if (!st.ok()) return Fail(st);
  std::printf("reference perplexity %.4f over %lld positions; base saved as %s\n",
              std::exp(nll / static_cast<double>(h.chunks.scored())),
              static_cast<long long>(h.chunks.scored()), f.save_base.c_str());
  return 0;
}

int Compare(const KldFlags& f, Model& model) {
  auto reader = eval::KldBaseReader::Open(f.base);
  if (!reader.ok()) return Fail(reader.status());
  const eval::KldBaseHeader& h = (*reader)->header();
  if (h.vocab != model.config().vocab)
    return Fail(InvalidArgument("the base was made with a {}-token vocabulary; {} has {}", h.vocab,
                                f.model, model.config().vocab));
  std::fprintf(stderr, "brisk eval kld: %s (%s) against the base %s (reference %s), %lld scored\n",
               f.model.c_str(), (f.precision + ", KV " + f.kv_precision).c_str(), f.base.c_str(),
               h.description.c_str(), static_cast<long long>(h.chunks.scored()));
  ThreadPool pool(f.threads);
  Progress progress(h.chunks.n_chunks);
  std::vector<float> ref(static_cast<size_t>(h.vocab)), test(ref.size());
  std::vector<eval::PositionStats> stats;
  stats.reserve(static_cast<size_t>(h.chunks.scored()));
  Status st = eval::ScoreChunks(
      model, pool, h.chunks,
      [&](int c, int j, const float* logits) {
        RETURN_IF_ERROR((*reader)->Next(ref.data()));
        eval::LogSoftmax(logits, h.vocab, test.data());
        stats.push_back(
            eval::ComparePosition(ref.data(), test.data(), h.vocab, h.chunks.next_token(c, j)));
        return Status::Ok();
      },
      [&](int c) { progress.Chunk(c); }, f.kv_type);
  if (!st.ok()) return Fail(st);
  const eval::KldSummary sum = eval::Summarize(stats);
  std::string md = eval::SummaryMarkdown(sum);
  bool pass = true;
  auto check = [&](bool ok, const std::string& what) {
    md += fmt::format("\n{} {}", ok ? "PASS" : "FAIL", what);
    pass = pass && ok;
  };
  if (f.max_kld >= 0)
    check(sum.kld.mean <= f.max_kld, fmt::format("mean KLD {:.6f} <= {}", sum.kld.mean, f.max_kld));
  if (f.min_same_top1 >= 0)
    check(sum.same_top1.mean >= f.min_same_top1,
          fmt::format("same top-1 {:.4f} >= {}", sum.same_top1.mean, f.min_same_top1));
  if (f.max_ln_ppl_ratio >= 0)
    check(sum.ln_ppl_ratio.mean <= f.max_ln_ppl_ratio,
          fmt::format("ln(PPL ratio) {:.6f} <= {}", sum.ln_ppl_ratio.mean, f.max_ln_ppl_ratio));
  if (md.back() != '\n') md += '\n';
  std::fputs(md.c_str(), stdout);
  if (!f.json_out.empty()) {
    nlohmann::json j = eval::SummaryJson(sum);
    j["model"] = f.model;
    j["precision"] = f.precision;
    j["kv_precision"] = f.kv_precision;
    j["reference"] = nlohmann::json::parse(h.description, nullptr, false);
    j["n_ctx"] = h.chunks.n_ctx;
    j["chunks"] = h.chunks.n_chunks;
    j["passed"] = pass;
    if (Status s = WriteTextFile(f.json_out, j.dump(2) + "\n"); !s.ok()) return Fail(s);
  }
  if (!f.markdown_out.empty()) {
    if (Status s = WriteTextFile(f.markdown_out, md); !s.ok()) return Fail(s);
  }
  return pass ? 0 : 1;
}

int RunKld(KldFlags f) {
  if (f.save_base.empty() == f.base.empty())
    return Fail(InvalidArgument("give exactly one of --save-base and --base"));
  if (f.text.empty()) f.text = DefaultKldTextPath();
  if (f.model.empty()) f.model = DefaultModelPath();
  auto kv_type = ParseKvPrecision(f.kv_precision);
  if (!kv_type.ok()) return Fail(kv_type.status().WithContext("--kv-precision"));
  f.kv_type = *kv_type;
  auto model = LoadModel(f);
  if (!model.ok()) return Fail(model.status());
  return f.save_base.empty() ? Compare(f, **model) : SaveBase(f, **model);
}

}  // namespace

std::string DefaultKldTextPath() {
  const char* kText = "bench/golden/kld_text.txt";
  if (std::filesystem::exists(kText)) return kText;
  // The source tree's (BRISK_DEFAULT_MODEL is <source>/models/<file>).
  return (std::filesystem::path(BRISK_DEFAULT_MODEL).parent_path().parent_path() / kText).string();
}

CommandRunner RegisterEvalKld(CLI::App& eval_app) {
  auto f = std::make_shared<KldFlags>();
  CLI::App* kld = eval_app.add_subcommand(
      "kld",
      "KL divergence, same-top-1 and perplexity of a model configuration against a "
      "reference's saved distributions (as llama-perplexity --kl-divergence)");
  kld->add_option("--model", f->model, "GGUF file (default: the embedded default model)");
  kld->add_option(
      "--precision", f->precision,
      "Weight precision at load: native (default), f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, "
      "... (as brisk serve --precision)");
  kld->add_option("--kv-precision", f->kv_precision,
                  "KV cache precision: f16 (default), f32, bf16, int8, fp8");
  kld->add_option("--text", f->text,
                  "Evaluation text (UTF-8), for --save-base (default: the installed "
                  "bench/golden/kld_text.txt)");
  kld->add_option("--save-base", f->save_base,
                  "Score the text with this (reference) configuration and save its distributions");
  kld->add_option("--base", f->base, "Compare against distributions saved by --save-base");
  kld->add_option("--ctx", f->ctx, "Tokens per chunk; the second half is scored (default 512)");
  kld->add_option("--chunks", f->chunks, "At most this many chunks (default: all)");
  kld->add_option("--threads", f->threads, "Compute threads (default 2)");
  kld->add_option("--json", f->json_out, "Also write the summary as JSON here");
  kld->add_option("--markdown", f->markdown_out, "Also write the markdown summary here");
  kld->add_option("--max-kld", f->max_kld, "Exit 1 when the mean KLD is above this");
  kld->add_option("--min-same-top1", f->min_same_top1,
                  "Exit 1 when the same-top-1 rate (0..1) is below this");
  kld->add_option("--max-ln-ppl-ratio", f->max_ln_ppl_ratio,
                  "Exit 1 when ln(PPL(test)/PPL(reference)) is above this");
  return [f, kld]() -> int { return kld->parsed() ? RunKld(*f) : -1; };
}

}  // namespace brisk
