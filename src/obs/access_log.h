// The access log: one JSON object per line for every generation request that
// finished (answered, streamed to the end, cancelled, rejected, timed out,
// failed or refused as invalid), for billing, debugging and SLO accounting.
//
//   {"ts":"2025-06-01T12:00:00.123Z","request_id":"chatcmpl-7","tenant":"acme",
//    "feature":"search","model":"SmolLM2-135M-Instruct.Q4_1",
//    "endpoint":"chat.completions","status":200,"outcome":"ok","stream":true,
//    "priority":"interactive","prompt_tokens":31,"cached_tokens":16,
//    "output_tokens":64,"queue_ms":0.412,"ttft_ms":18.5,"total_ms":301.25,
//    "finish_reason":"stop","remote_addr":"127.0.0.1:50312",
//    "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",
//    "stages":{"tokenize":0.41,"queue":0.02,"prefill":12.3,"decode":280.1,"write":0.2}}
//
// (one line in the file). Keys always appear, in this order, with these
// types: strings are strings ("" when unknown), counts are integers, times are
// milliseconds with up to 3 decimals (-1 when unknown). Every line is valid
// JSON whatever bytes a field holds: invalid UTF-8 becomes U+FFFD, control
// characters are escaped, and each string is cut to kMaxAccessLogField bytes
// (fields such as `model` come from the client). docs/config.md lists the
// keys.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "util/status.h"

namespace brisk {

// How a request ended, from the client's point of view.
enum class AccessOutcome {
  kOk,         // answered (non-stream) or streamed to the end
  kCancelled,  // the client went away (or cancelled) first
  kRejected,   // not admitted: queue full (429), draining (503), auth (401/403)
  kTimeout,    // its deadline passed
  kError,      // a server-side failure (5xx, or an error event mid-stream)
  kInvalid,    // a bad request (400): JSON, schema, unknown model, too long
};

// "ok", "cancelled", "rejected", "timeout", "error", "invalid".
std::string_view AccessOutcomeName(AccessOutcome outcome);

// Longest string field written, in bytes; longer ones are cut.
inline constexpr size_t kMaxAccessLogField = 256;

struct AccessLogRecord {
  // When the request finished. Left at the epoch, AccessLog::Write stamps
  // the current time.
  std::chrono::system_clock::time_point time{};
  std::string request_id;  // the response id ("chatcmpl-..."), "" if none was made
  std::string tenant;      // of the API key; "" without authentication
  std::string feature;     // of the API key; "" = none
  std::string model;       // as the request named it
  std::string endpoint = "chat.completions";  // "chat.completions", "completions", "responses"
  int status = 200;  // HTTP status sent (a stream that fails later keeps its 200)
  AccessOutcome outcome = AccessOutcome::kOk;
  bool stream = false;
  std::string priority = "interactive";  // "interactive", "batch"
  int64_t prompt_tokens = 0;             // summed over the request's prompts
  int64_t cached_tokens = 0;             // prompt tokens served from the prefix cache
  int64_t output_tokens = 0;             // summed over all choices
  double queue_ms = -1;                  // arrival -> admitted to the running batch
  double ttft_ms = -1;                   // arrival -> first output token
  double total_ms = -1;                  // arrival -> last byte written
  std::string finish_reason;             // "stop", "length", ...; "" when none (errors)
  std::string remote_addr;               // "127.0.0.1:50312", "[::1]:50312"
  std::string trace_id;                  // W3C trace id (32 hex digits) of the request; "" if none
  // Per-stage latency budget (obs/server_timing.h), ms, in order; they
  // add up to total_ms. Empty ({}) when the request ended before stages were
  // measured (rejected by the header gate, invalid).
  std::vector<std::pair<std::string, double>> stages;
};

// One JSON object, without the newline. Never throws on any field content.
std::string FormatAccessLogLine(const AccessLogRecord& record);

// Writes access log lines to stdout, stderr or a file, or nothing when
// disabled. Write() never blocks on I/O: it queues the record and a writer
// thread formats it and writes it with one write(2) per line, unbuffered, in
// the order of the Write() calls. Files are opened with O_APPEND, so lines
// from several processes do not interleave. When the destination cannot keep
// up (a full pipe nobody reads), at most `max_pending` records wait and the
// rest are dropped and counted (and a warning is logged); serving never stalls
// on the log. Thread-safe.
class AccessLog {
 public:
  static constexpr size_t kDefaultMaxPending = 4096;

  // Disabled() when `enabled` is false, else Open(path): how the `logging:`
  // section's access_log and access_log_path read.
  static Expected<std::unique_ptr<AccessLog>> Create(bool enabled, std::string_view path);
  // "-" or "stdout": standard output; "stderr": standard error; anything
  // else is a file path, created (mode 0644) or appended to. A file that
  // cannot be opened is kInvalidArgument naming the path and the reason.
  static Expected<std::unique_ptr<AccessLog>> Open(std::string_view path,
                                                   size_t max_pending = kDefaultMaxPending);
  // Writes nothing.
  static std::unique_ptr<AccessLog> Disabled();

  // Writes what is queued (waiting at most 2 s for a stuck destination),
  // then stops the writer and closes a file.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return enabled_; }
  // "stdout", "stderr", the file path, or "disabled".
  const std::string& destination() const { return destination_; }

  // Queues one line. Cheap; never blocks on I/O; never throws.
  void Write(AccessLogRecord record);
  // Waits until every queued line is written or `timeout` passes; true when
  // nothing is left. For tests and shutdown.
  bool Flush(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  int64_t lines_written() const { return written_.load(std::memory_order_relaxed); }
  // Records dropped because the queue was full, or lost to write errors.
  int64_t lines_dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  AccessLog(int fd, bool owns_fd, std::string destination, size_t max_pending);
  void Run();
  bool WriteLine(const std::string& line);

  const bool enabled_;
  const int fd_;
  const bool owns_fd_;
  const std::string destination_;
  const size_t max_pending_;

  std::mutex mu_;
  std::condition_variable work_cv_;  // records queued, or stop
  std::condition_variable idle_cv_;  // queue empty and writer idle
  std::deque<AccessLogRecord> queue_;
  bool writing_ = false;  // the writer holds records taken from the queue
  bool stop_ = false;
  int64_t dropped_since_warning_ = 0;
  std::atomic<bool> abandon_{false};  // give up on a stuck destination
  std::atomic<int64_t> written_{0};
  std::atomic<int64_t> dropped_{0};
  std::thread writer_;
};

}  // namespace brisk
