#include "obs/access_log.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "util/log.h"

namespace brisk {

namespace {

using Json = nlohmann::ordered_json;

// At most kMaxAccessLogField bytes, cut before a UTF-8 continuation byte so
// that a valid string stays valid.
std::string_view Cut(std::string_view s) {
  if (s.size() <= kMaxAccessLogField) return s;
  size_t n = kMaxAccessLogField;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// Milliseconds to 3 decimals (microseconds); unknown (negative, NaN, inf)
// is the integer -1.
Json Ms(double ms) {
  if (!std::isfinite(ms) || ms < 0) return Json(-1);
  return Json(std::round(ms * 1000) / 1000);
}

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

std::string_view AccessOutcomeName(AccessOutcome outcome) {
  switch (outcome) {
    case AccessOutcome::kOk: return "ok";
    case AccessOutcome::kCancelled: return "cancelled";
    case AccessOutcome::kRejected: return "rejected";
    case AccessOutcome::kTimeout: return "timeout";
    case AccessOutcome::kError: return "error";
    case AccessOutcome::kInvalid: return "invalid";
  }
  return "error";
}

std::string FormatAccessLogLine(const AccessLogRecord& r) {
  Json j;
  j["ts"] = log::Timestamp(r.time);
  j["request_id"] = Cut(r.request_id);
  j["tenant"] = Cut(r.tenant);
  j["feature"] = Cut(r.feature);
  j["model"] = Cut(r.model);
  j["endpoint"] = Cut(r.endpoint);
  j["status"] = r.status;
  j["outcome"] = AccessOutcomeName(r.outcome);
  j["stream"] = r.stream;
  j["priority"] = Cut(r.priority);
  j["prompt_tokens"] = r.prompt_tokens;
  j["cached_tokens"] = r.cached_tokens;
  j["output_tokens"] = r.output_tokens;
  j["queue_ms"] = Ms(r.queue_ms);
  j["ttft_ms"] = Ms(r.ttft_ms);
  j["total_ms"] = Ms(r.total_ms);
  j["finish_reason"] = Cut(r.finish_reason);
  j["remote_addr"] = Cut(r.remote_addr);
  j["trace_id"] = Cut(r.trace_id);
  Json stages = Json::object();
  for (const auto& [name, ms] : r.stages) stages[std::string(Cut(name))] = Ms(ms);
  j["stages"] = std::move(stages);
  // `replace` writes U+FFFD for invalid UTF-8 instead of throwing.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Expected<std::unique_ptr<AccessLog>> AccessLog::Create(bool enabled, std::string_view path) {
  if (!enabled) return Disabled();
  return Open(path);
}

Expected<std::unique_ptr<AccessLog>> AccessLog::Open(std::string_view path, size_t max_pending) {
  max_pending = std::max<size_t>(max_pending, 1);
  if (path == "-" || path == "stdout") {
    return std::unique_ptr<AccessLog>(new AccessLog(STDOUT_FILENO, false, "stdout", max_pending));
  }
  if (path == "stderr") {
    return std::unique_ptr<AccessLog>(new AccessLog(STDERR_FILENO, false, "stderr", max_pending));
  }
  if (path.empty()) {
    return InvalidArgument("access log path is empty (use \"-\" for stdout, or a file path)");
  }
  std::string p(path);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return InvalidArgument("cannot open access log '{}': {}", p, ErrnoText(errno));
  return std::unique_ptr<AccessLog>(new AccessLog(fd, true, std::move(p), max_pending));
}

std::unique_ptr<AccessLog> AccessLog::Disabled() {
  return std::unique_ptr<AccessLog>(new AccessLog(-1, false, "disabled", 1));
}

AccessLog::AccessLog(int fd, bool owns_fd, std::string destination, size_t max_pending)
    : enabled_(fd >= 0),
      fd_(fd),
      owns_fd_(owns_fd),
      destination_(std::move(destination)),
      max_pending_(max_pending) {
  if (enabled_) writer_ = std::thread([this] { Run(); });
}

AccessLog::~AccessLog() {
  if (writer_.joinable()) {
    // A destination nobody reads must not hang shutdown: after the grace,
    // the writer drops what is left (counted) instead of waiting.
    if (!Flush(std::chrono::seconds(2))) abandon_.store(true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    writer_.join();
    if (abandon_.load()) {
      log::Warn("access log: {} took no lines for 2 s at shutdown; {} lines dropped in all",
                destination_, lines_dropped());
    } else if (dropped_since_warning_ > 0) {
      log::Warn("access log: {} lines to {} were dropped", dropped_since_warning_, destination_);
    }
  }
  if (owns_fd_) ::close(fd_);
}

void AccessLog::Write(AccessLogRecord record) {
  if (!enabled_) return;
  if (record.time == std::chrono::system_clock::time_point{}) {
    record.time = std::chrono::system_clock::now();
  }
  bool warn = false;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= max_pending_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      warn = dropped_since_warning_++ == 0;
    } else {
      queue_.push_back(std::move(record));
    }
  } catch (...) {  // out of memory: the line is lost, serving goes on
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (warn) {
    log::Warn("access log: {} cannot keep up ({} lines waiting); dropping lines until it does",
              destination_, max_pending_);
  } else {
    work_cv_.notify_one();
  }
}

bool AccessLog::Flush(std::chrono::milliseconds timeout) {
  if (!enabled_) return true;
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !writing_; });
}

void AccessLog::Run() {
  std::deque<AccessLogRecord> batch;
  bool failing = false;  // the last write failed; warn once per failure streak
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, nothing left
    batch.swap(queue_);
    writing_ = true;
    lock.unlock();
    for (const AccessLogRecord& record : batch) {
      bool ok = false;
      int err = 0;
      try {
        std::string line = FormatAccessLogLine(record);
        line += '\n';
        ok = WriteLine(line);
        err = errno;
      } catch (...) {  // out of memory formatting one line
        err = ENOMEM;
      }
      if (ok) {
        written_.fetch_add(1, std::memory_order_relaxed);
        failing = false;
        continue;
      }
      dropped_.fetch_add(1, std::memory_order_relaxed);
      if (!failing && !abandon_.load()) {
        log::Warn("access log: writing to {} failed: {}", destination_, ErrnoText(err));
      }
      failing = true;
    }
    batch.clear();
    lock.lock();
    writing_ = false;
    if (queue_.empty()) {
      idle_cv_.notify_all();
      if (!stop_ && dropped_since_warning_ > 0) {
        const int64_t lost = std::exchange(dropped_since_warning_, 0);
        lock.unlock();
        log::Warn("access log: {} caught up; {} lines were dropped", destination_, lost);
        lock.lock();
      }
    }
  }
  idle_cv_.notify_all();
}

// One write(2) for the whole line unless the destination takes it in parts.
// Waits for a full pipe in short polls, so that the destructor can make it
// give up.
bool AccessLog::WriteLine(const std::string& line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    if (abandon_.load(std::memory_order_relaxed)) {
      errno = ECANCELED;
      return false;
    }
    pollfd pfd{fd_, POLLOUT, 0};
    int ready = ::poll(&pfd, 1, 100);
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    ssize_t n = ::write(fd_, p, left);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return false;
    }
  }
  return true;
}

}  // namespace brisk
