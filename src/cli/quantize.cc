// `brisk quantize IN OUT --type T`: convert a GGUF model's weights to another
// ggml format or a mixed recipe (src/model/quantize.h, docs/quantize.md).
// Exit 0 on success, 2 on an error (nothing is left at OUT then).
#include "model/quantize.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "model/gguf.h"

namespace brisk {
namespace {

struct QuantizeFlags {
  std::string in, out, type;
  int threads = 0;  // 0: hardware concurrency
  bool dry_run = false;
};

// An interrupted run removes its OUT.tmp (unlink is async-signal-safe).
char g_tmp_path[4096];
extern "C" void RemoveTmpAndExit(int sig) {
  if (g_tmp_path[0] != 0) ::unlink(g_tmp_path);
  ::_exit(128 + sig);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "brisk quantize: error: %s\n", message.c_str());
  return 2;
}

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

// OUT must differ from IN and its directory must be writable.
Status CheckOutput(const std::string& in, const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(in, out, ec) || fs::weakly_canonical(in, ec) == fs::weakly_canonical(out, ec))
    return InvalidArgument("OUT '{}' is the input file; write to another path", out);
  fs::path dir = fs::path(out).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    return InvalidArgument("output directory '{}' does not exist", dir.string());
  if (::access(dir.c_str(), W_OK) != 0)
    return InvalidArgument("output directory '{}' is not writable", dir.string());
  return Status::Ok();
}

void PrintPlan(const QuantPlan& plan) {
  size_t width = 0;
  for (const TensorPlan& t : plan.tensors) width = std::max(width, t.name.size());
  for (const TensorPlan& t : plan.tensors) {
    std::printf("%-*s  %-16s  %-6s -> %-6s%s\n", static_cast<int>(width), t.name.c_str(),
                Shape(t.dims).c_str(), DTypeName(t.from), DTypeName(t.to),
                t.copy() ? "  (copied)" : "");
  }
}

// Progress on stderr: a redrawn bar on a terminal, a line per tensor otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(const QuantPlan& plan) : plan_(plan), tty_(isatty(STDERR_FILENO)) {}
  void operator()(const QuantizeProgress& p) {
    const TensorPlan& t = plan_.tensors[p.index];
    if (tty_) {
      constexpr int kWidth = 30;
      const double frac = p.in_bytes_total ? static_cast<double>(p.in_bytes_done) /
                                                 static_cast<double>(p.in_bytes_total)
                                           : 1.0;
      const int fill = static_cast<int>(frac * kWidth);
      std::fprintf(stderr,
                   "\r\033[K[%.*s%*s] %zu/%zu  read %.1f/%.1f MiB, wrote %.1f MiB  %s -> %s", fill,
                   "##############################", kWidth - fill, "", p.index + 1, p.count,
                   MiB(p.in_bytes_done), MiB(p.in_bytes_total), MiB(p.out_bytes_done),
                   t.name.c_str(), DTypeName(t.to));
      if (p.done && p.index + 1 == p.count) std::fputc('\n', stderr);
      std::fflush(stderr);
      return;
    }
    if (!p.done) return;
    std::fprintf(stderr, "[%zu/%zu] %s %s -> %s%s\n", p.index + 1, p.count, t.name.c_str(),
                 DTypeName(t.from), DTypeName(t.to), t.copy() ? " (copied)" : "");
  }

 private:
  const QuantPlan& plan_;
  bool tty_;
};

int Run(const QuantizeFlags& f) {
  auto target = ParseQuantTarget(f.type);
  if (!target.ok()) return Fail(target.status().message());
  if (Status s = CheckOutput(f.in, f.out); !s.ok() && !f.dry_run) return Fail(s.message());
  auto in = GgufFile::Open(f.in);
  if (!in.ok()) return Fail(in.status().ToString());
  auto plan = PlanQuantization((*in)->tensors(), *target);
  if (!plan.ok()) return Fail(plan.status().message());

  for (const TensorPlan& t : plan->tensors) {
    if (!t.fallback.empty())
      std::fprintf(stderr, "brisk quantize: fallback: %s: %s\n", t.name.c_str(),
                   t.fallback.c_str());
  }
  if (plan->requantizes)
    std::fprintf(stderr,
                 "brisk quantize: warning: '%s' is already quantized; its weights are "
                 "dequantized to f32 and quantized again, so the output's quality is bounded "
                 "by the source's\n",
                 f.in.c_str());
  if (f.dry_run) {
    PrintPlan(*plan);
    return 0;
  }

  const int threads = f.threads > 0
                          ? f.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  std::snprintf(g_tmp_path, sizeof(g_tmp_path), "%s.tmp", f.out.c_str());
  std::signal(SIGINT, RemoveTmpAndExit);
  std::signal(SIGTERM, RemoveTmpAndExit);
  ProgressPrinter printer(*plan);
  auto stats = RunQuantization(**in, *plan, f.out, pool, std::ref(printer));
  if (!stats.ok()) return Fail(stats.status().ToString());
  std::fprintf(stderr,
               "brisk quantize: %s -> %s (%s): %.2f MiB -> %.2f MiB, %.2f bits per weight, "
               "%d fallback(s), %.1f s\n",
               f.in.c_str(), f.out.c_str(), target->name.c_str(), MiB(stats->in_file_bytes),
               MiB(stats->out_file_bytes), stats->bits_per_weight(), plan->fallbacks(),
               stats->seconds);
  return 0;
}

}  // namespace

CommandRunner RegisterQuantize(CLI::App& app) {
  auto f = std::make_shared<QuantizeFlags>();
  app.add_option("IN", f->in, "Input GGUF file")->required();
  app.add_option("OUT", f->out, "Output GGUF file (written to OUT.tmp, then renamed)")->required();
  app.add_option("--type,-t", f->type, "Target type: " + QuantTargetNames())->required();
  app.add_option("--threads", f->threads, "Threads (default: all cores)");
  app.add_flag("--dry-run", f->dry_run, "Print the plan (tensor, shape, from -> to) only");
  return [f] { return Run(*f); };
}

}  // namespace brisk
