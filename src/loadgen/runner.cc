#include "loadgen/runner.h"

#include <fmt/chrono.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <optional>

#include "loadgen/arrivals.h"
#include "util/log.h"

namespace brisk::loadgen {

namespace asio = boost::asio;

namespace {

constexpr auto kProgressPeriod = std::chrono::milliseconds(500);

std::string UtcNow() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

// Logs an exception that escaped a detached coroutine (none should: the
// request coroutine catches at its boundary).
void LogEscaped(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    log::Error("brisk bench: internal error: {}", ex.what());
  } catch (...) {
    log::Error("brisk bench: internal error");
  }
}

class Runner {
 public:
  Runner(BenchConfig config, Workload workload)
      : config_(std::move(config)), workload_(std::move(workload)) {}

  Expected<BenchResult> Run();

 private:
  struct Phase {
    const char* name = "";
    std::vector<RequestRecord>* records = nullptr;
    // Built before the phase starts, so that making a prompt never delays a send.
    std::vector<WorkloadItem> items;
    int64_t total = 0, next = 0, done = 0, inflight = 0;
    int64_t errors = 0, rejected = 0, output_tokens = 0;
    Clock::time_point start{}, last_finish{};
    bool finished = false;
  };

  Expected<std::string> ResolveModel();
  void RunPhase(const char* name, uint64_t stream, int64_t n, int64_t workers,
                const std::vector<double>* arrivals, std::vector<RequestRecord>* records);
  asio::awaitable<void> Request(int64_t index);
  asio::awaitable<void> OpenLoop(const std::vector<double>& arrivals);
  asio::awaitable<void> ClosedWorker();
  asio::awaitable<void> Progress();
  void PrintProgress(bool final);

  BenchConfig config_;
  Workload workload_;
  asio::io_context io_;
  std::optional<Client> client_;
  asio::steady_timer slot_free_{io_};
  asio::steady_timer progress_timer_{io_};
  asio::signal_set signals_{io_, SIGINT, SIGTERM};
  Phase phase_;
  bool interrupted_ = false;
  const bool tty_ = isatty(STDERR_FILENO) != 0;
  int progress_ticks_ = 0;
};

Expected<std::string> Runner::ResolveModel() {
  std::optional<Expected<std::pair<int, std::string>>> got;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { got.emplace(co_await client_->Get("/v1/models")); },
      LogEscaped);
  io_.run();
  io_.restart();
  if (!got) return Internal("GET /v1/models did not complete");
  if (!got->ok()) return got->status().WithContext("listing the server's models (or pass --model)");
  const auto& [status, body] = got->value();
  if (status != 200)
    return Status(
        StatusCode::kUnavailable,
        fmt::format("GET /v1/models: HTTP {} (pass --model): {}", status, body.substr(0, 200)));
  return ParseFirstModelId(body);
}

asio::awaitable<void> Runner::Request(int64_t index) {
  Phase& p = phase_;
  RequestRecord* r = &(*p.records)[static_cast<size_t>(index)];
  r->index = index;
  try {
    co_await client_->Stream(p.items[static_cast<size_t>(index)], p.start, r);
  } catch (const std::exception& e) {  // Beast/Asio internals: the one boundary
    r->status = RequestStatus::kError;
    r->error = fmt::format("internal: {}", e.what());
  }
  --p.inflight;
  ++p.done;
  p.last_finish = Clock::now();
  if (r->status == RequestStatus::kError) ++p.errors;
  if (r->status == RequestStatus::kRejected) ++p.rejected;
  if (r->status == RequestStatus::kOk) p.output_tokens += r->output_tokens;
  slot_free_.cancel();
  if (p.done == p.total) {
    p.finished = true;
    progress_timer_.cancel();
    signals_.cancel();  // the last pending work: io_.run() returns
  }
}

asio::awaitable<void> Runner::OpenLoop(const std::vector<double>& arrivals) {
  Phase& p = phase_;
  const int64_t cap = config_.load.max_inflight;
  asio::steady_timer timer(io_);
  for (int64_t i = 0; i < p.total; ++i) {
    const double at = arrivals[static_cast<size_t>(i)];
    const Clock::time_point due =
        p.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at));
    if (due > Clock::now()) {
      timer.expires_at(due);
      co_await timer.async_wait(kNoThrow);
    }
    while (cap > 0 && p.inflight >= cap) {
      slot_free_.expires_at(Clock::time_point::max());
      co_await slot_free_.async_wait(kNoThrow);
    }
    (*p.records)[static_cast<size_t>(i)].scheduled_s = at;
    ++p.inflight;
    asio::co_spawn(io_, Request(i), LogEscaped);
  }
}

asio::awaitable<void> Runner::ClosedWorker() {
  Phase& p = phase_;
  while (p.next < p.total) {
    const int64_t i = p.next++;
    (*p.records)[static_cast<size_t>(i)].scheduled_s = SecondsBetween(p.start, Clock::now());
    ++p.inflight;
    co_await Request(i);
  }
}

asio::awaitable<void> Runner::Progress() {
  while (!phase_.finished) {
    progress_timer_.expires_after(kProgressPeriod);
    co_await progress_timer_.async_wait(kNoThrow);
    if (!phase_.finished) PrintProgress(false);
  }
}

void Runner::PrintProgress(bool final) {
  const Phase& p = phase_;
  // A pipe or file gets a line every 5 s; a terminal one rewritten line.
  if (!tty_ && !final && ++progress_ticks_ % 10 != 0) return;
  const double elapsed = SecondsBetween(p.start, final ? p.last_finish : Clock::now());
  const double rate = elapsed > 0 ? static_cast<double>(p.done) / elapsed : 0;
  const double tok = elapsed > 0 ? static_cast<double>(p.output_tokens) / elapsed : 0;
  std::string line = fmt::format(
      "{} {}/{} done | {:.2f} req/s | {:.1f} tok/s | in-flight {} | errors {} | 429 {} | {:.1f} s",
      p.name, p.done, p.total, rate, tok, p.inflight, p.errors, p.rejected, elapsed);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void Runner::RunPhase(const char* name, uint64_t stream, int64_t n, int64_t workers,
                      const std::vector<double>* arrivals, std::vector<RequestRecord>* records) {
  records->assign(static_cast<size_t>(n), RequestRecord{});
  for (int64_t i = 0; i < n; ++i) (*records)[static_cast<size_t>(i)].index = i;
  phase_ = Phase{};
  phase_.name = name;
  phase_.records = records;
  phase_.total = n;
  phase_.items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) phase_.items.push_back(workload_.Item(stream, i));
  phase_.start = phase_.last_finish = Clock::now();
  progress_ticks_ = 0;
  if (n == 0) return;
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;  // cancelled at the end of the phase
    interrupted_ = true;
    boost::system::error_code ignored;
    signals_.clear(ignored);  // a second Ctrl-C kills the process
    io_.stop();
  });
  if (arrivals) {
    asio::co_spawn(io_, OpenLoop(*arrivals), LogEscaped);
  } else {
    for (int64_t w = 0; w < std::min(workers, n); ++w)
      asio::co_spawn(io_, ClosedWorker(), LogEscaped);
  }
  if (config_.progress) asio::co_spawn(io_, Progress(), LogEscaped);
  io_.run();
  io_.restart();
  if (config_.progress) PrintProgress(true);
}

Expected<BenchResult> Runner::Run() {
  ASSIGN_OR_RETURN(Client client, Client::Create(io_.get_executor(), config_.client));
  client_.emplace(std::move(client));
  BenchResult result;
  // No model given: ask the server, as vLLM's benchmark does.
  if (config_.client.request.model.empty()) {
    ASSIGN_OR_RETURN(config_.client.request.model, ResolveModel());
    client_->set_model(config_.client.request.model);
  }
  const LoadSpec& load = config_.load;
  const bool closed = load.concurrency > 0;
  std::vector<double> arrivals;
  if (!closed) {
    ASSIGN_OR_RETURN(arrivals,
                     ArrivalOffsets({load.request_rate, load.burstiness, config_.workload.seed},
                                    load.num_requests));
  }
  result.started_at = UtcNow();

  if (load.warmup > 0) {
    const int64_t warm_workers =
        closed ? load.concurrency : (load.max_inflight > 0 ? load.max_inflight : 1);
    std::vector<RequestRecord> warm;
    RunPhase("warm-up", kWarmupStream, load.warmup, warm_workers, nullptr, &warm);
    for (const RequestRecord& r : warm) result.warmup_failures += r.status != RequestStatus::kOk;
  }
  if (!interrupted_) {
    RunPhase("bench", kMeasuredStream, load.num_requests, load.concurrency,
             closed ? nullptr : &arrivals, &result.records);
  }
  result.interrupted = interrupted_;
  const double duration_s = SecondsBetween(phase_.start, phase_.last_finish);
  result.metrics = ComputeMetrics(result.records, duration_s, config_.slo);
  result.workload_source = workload_.source();
  result.corpus_passages = workload_.corpus_passages();
  result.config = config_;
  return result;
}

}  // namespace

Status ValidateLoadSpec(const LoadSpec& load) {
  if (load.num_requests < 1) return InvalidArgument("--num-requests must be >= 1");
  if (load.warmup < 0) return InvalidArgument("--warmup must be >= 0");
  if (load.concurrency < 0) return InvalidArgument("--concurrency must be >= 0");
  if (load.max_inflight < 0) return InvalidArgument("--max-inflight must be >= 0");
  if (load.concurrency == 0) {
    if (!(load.request_rate > 0)) return InvalidArgument("--request-rate must be > 0 (or inf)");
    if (!(load.burstiness > 0) || !std::isfinite(load.burstiness))
      return InvalidArgument("--burstiness must be > 0");
  }
  return Status::Ok();
}

Expected<BenchResult> RunBench(BenchConfig config) {
  RETURN_IF_ERROR(ValidateLoadSpec(config.load));
  ASSIGN_OR_RETURN(Workload workload, Workload::Create(config.workload));
  Runner runner(std::move(config), std::move(workload));
  return runner.Run();
}

}  // namespace brisk::loadgen
