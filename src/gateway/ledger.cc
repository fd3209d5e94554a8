// OpenLedger and the group-commit writer shared by both stores.
#include "gateway/ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "gateway/ledger_store.h"
#include "util/log.h"
#include "util/utf8.h"

namespace brisk::gateway {
namespace {

// Valid UTF-8 without NULs: PostgreSQL's text refuses both, and the JSON
// report must never meet bytes it cannot encode.
void CleanText(std::string* s) {
  if (s->empty()) return;
  std::string valid = ToValidUtf8(*s);
  if (valid.find('\0') != std::string::npos) {
    std::string out;
    for (char c : valid) {
      if (c == '\0') {
        out += kUtf8Replacement;
      } else {
        out += c;
      }
    }
    valid = std::move(out);
  }
  *s = std::move(valid);
}

void CleanRow(LedgerRow* row) {
  for (std::string* s : {&row->request_id, &row->tenant, &row->api_key_name, &row->feature,
                         &row->tier, &row->upstream, &row->model, &row->endpoint, &row->outcome,
                         &row->finish_reason, &row->rollout}) {
    CleanText(s);
  }
  if (!std::isfinite(row->cost_usd)) row->cost_usd = 0;
  if (!std::isfinite(row->ttft_ms)) row->ttft_ms = -1;
  if (!std::isfinite(row->total_ms)) row->total_ms = 0;
}

// A spooled row: one JSON object per line, the columns by name.
nlohmann::json SpoolJson(const LedgerRow& r) {
  return {{"time_unix_ms", r.time_unix_ms},
          {"request_id", r.request_id},
          {"tenant", r.tenant},
          {"api_key_name", r.api_key_name},
          {"feature", r.feature},
          {"tier", r.tier},
          {"upstream", r.upstream},
          {"model", r.model},
          {"endpoint", r.endpoint},
          {"prompt_tokens", r.tokens.prompt},
          {"cached_tokens", r.tokens.cached},
          {"completion_tokens", r.tokens.output},
          {"cost_usd", r.cost_usd},
          {"status", r.status},
          {"outcome", r.outcome},
          {"stream", r.stream},
          {"ttft_ms", r.ttft_ms},
          {"total_ms", r.total_ms},
          {"attempts", r.attempts},
          {"escalations", r.escalations},
          {"finish_reason", r.finish_reason},
          {"shadow", r.shadow},
          {"rollout", r.rollout}};
}

std::optional<LedgerRow> RowOfSpool(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return std::nullopt;  // a line cut by a crash mid-write
  LedgerRow r;
  try {
    r.time_unix_ms = j.at("time_unix_ms").get<int64_t>();
    r.request_id = j.at("request_id").get<std::string>();
    r.tenant = j.at("tenant").get<std::string>();
    r.api_key_name = j.at("api_key_name").get<std::string>();
    r.feature = j.at("feature").get<std::string>();
    r.tier = j.at("tier").get<std::string>();
    r.upstream = j.at("upstream").get<std::string>();
    r.model = j.at("model").get<std::string>();
    r.endpoint = j.at("endpoint").get<std::string>();
    r.tokens.prompt = j.at("prompt_tokens").get<int64_t>();
    r.tokens.cached = j.at("cached_tokens").get<int64_t>();
    r.tokens.output = j.at("completion_tokens").get<int64_t>();
    r.cost_usd = j.at("cost_usd").get<double>();
    r.status = j.at("status").get<int>();
    r.outcome = j.at("outcome").get<std::string>();
    r.stream = j.at("stream").get<bool>();
    r.ttft_ms = j.at("ttft_ms").get<double>();
    r.total_ms = j.at("total_ms").get<double>();
    r.attempts = j.at("attempts").get<int32_t>();
    r.escalations = j.at("escalations").get<int32_t>();
    r.finish_reason = j.at("finish_reason").get<std::string>();
    r.shadow = j.at("shadow").get<bool>();
    r.rollout = j.at("rollout").get<std::string>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return r;
}

struct Pending {
  LedgerRow row;
  DurableCallback durable;
};

// Append() queues; one writer thread takes everything queued (up to
// kLedgerMaxBatchRows), commits it in one transaction, then calls the
// callbacks. While a commit (an fsync) runs, new rows queue up and go into the
// next one, so the number of transactions follows the disk, not the request
// rate.
class GroupCommitLedger final : public Ledger {
 public:
  GroupCommitLedger(std::unique_ptr<LedgerStore> store, std::string spool_path)
      : store_(std::move(store)), spool_path_(std::move(spool_path)) {
    if (!spool_path_.empty()) {
      std::ifstream in(spool_path_);
      std::string line;
      while (std::getline(in, line)) ++stats_.spool_rows;
      if (stats_.spool_rows > 0) {
        log::Warn("cost ledger: {} row(s) spooled in {} by an earlier run; writing them",
                  stats_.spool_rows, spool_path_);
      }
    }
    writer_ = std::thread([this] { WriterLoop(); });
  }

  // Commits whatever is queued, then stops the writer.
  ~GroupCommitLedger() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    writer_.join();
  }

  void Append(LedgerRow row, DurableCallback durable) override {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(Pending{std::move(row), std::move(durable)});
      ++stats_.rows_appended;
    }
    wake_.notify_one();
  }

  void Flush() override {
    std::unique_lock lock(mu_);
    const int64_t target = stats_.rows_appended;
    finished_cv_.wait(lock, [&] { return finished_ >= target; });
  }

  Expected<std::vector<CostGroup>> Query(const CostQuery& q) override { return store_->Query(q); }
  Expected<double> SpendSince(const std::string& name, bool by_feature,
                              int64_t since_unix_ms) override {
    return store_->SpendSince(name, by_feature, since_unix_ms);
  }
  Expected<int64_t> CountRows() override { return store_->CountRows(); }
  LedgerStats Stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }
  const char* kind() const override { return store_->kind(); }

 private:
  void WriterLoop() {
    std::vector<LedgerRow> rows;
    std::vector<DurableCallback> callbacks;
    std::unique_lock lock(mu_);
    for (;;) {
      // With rows in the spool the writer tries to write them once a second
      // (not once a batch: on a cut link each try takes the connect timeout).
      if (stats_.spool_rows > 0) {
        if (std::chrono::steady_clock::now() >= next_unspool_) {
          lock.unlock();
          Unspool();
          lock.lock();
          next_unspool_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        }
        if (stats_.spool_rows > 0) {
          wake_.wait_until(lock, next_unspool_, [&] { return stop_ || !queue_.empty(); });
        }
      } else {
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      }
      if (queue_.empty()) {
        if (stop_) return;  // stopping, nothing left
        continue;
      }
      const size_t n = std::min<size_t>(queue_.size(), kLedgerMaxBatchRows);
      rows.clear();
      callbacks.clear();
      for (size_t i = 0; i < n; ++i) {
        rows.push_back(std::move(queue_.front().row));
        callbacks.push_back(std::move(queue_.front().durable));
        queue_.pop_front();
      }
      // Rows already wait in the spool: the database was away a moment ago.
      // New rows join them (an fsync, not a connection attempt that may take
      // its timeout), and the once-a-second unspooling finds when it is back.
      const bool spooling = stats_.spool_rows > 0;
      lock.unlock();
      std::vector<Status> results = Commit(rows, spooling);
      int64_t ok = 0;
      for (size_t i = 0; i < n; ++i) {
        if (results[i].ok()) ++ok;
        if (callbacks[i]) callbacks[i](results[i]);
      }
      lock.lock();
      stats_.rows_committed += ok;
      stats_.rows_failed += static_cast<int64_t>(n) - ok;
      stats_.transactions += transactions_;
      transactions_ = 0;
      finished_ += static_cast<int64_t>(n);
      finished_cv_.notify_all();
    }
  }

  // One status per row. The batch goes in one transaction; when that fails on
  // the data (one bad row), each row is tried alone so that one row cannot
  // lose the others. request_id makes the retry safe: a row that did commit
  // is skipped the second time.
  std::vector<Status> Commit(std::vector<LedgerRow>& rows, bool spooling) {
    for (LedgerRow& row : rows) CleanRow(&row);
    Status st = spooling && !spool_path_.empty()
                    ? Status(StatusCode::kUnavailable, "rows are waiting in the spool")
                    : store_->InsertBatch(rows);
    if (st.ok()) {
      ++transactions_;
      return std::vector<Status>(rows.size());
    }
    if (st.code() == StatusCode::kUnavailable && !spool_path_.empty()) {
      Status spooled = Spool(rows);
      if (spooled.ok()) {
        if (!spooling) {
          log::Warn("cost ledger: {} row(s) spooled to {} (the database is away: {})", rows.size(),
                    spool_path_, st.message());
        }
        return std::vector<Status>(rows.size());
      }
      log::Error("cost ledger: {} row(s) not spooled: {}", rows.size(), spooled.message());
    }
    if (st.code() != StatusCode::kInvalidArgument || rows.size() == 1) {
      log::Error("cost ledger: {} row(s) not written: {}", rows.size(), st.message());
      return std::vector<Status>(rows.size(), st);
    }
    log::Warn("cost ledger: a batch of {} rows failed ({}); writing them one by one", rows.size(),
              st.message());
    std::vector<Status> results;
    results.reserve(rows.size());
    for (const LedgerRow& row : rows) {
      Status one = store_->InsertBatch(std::span<const LedgerRow>(&row, 1));
      if (one.ok()) {
        ++transactions_;
      } else {
        log::Error("cost ledger: row {} not written: {}", row.request_id, one.message());
      }
      results.push_back(std::move(one));
    }
    return results;
  }

  // Appends `rows` to the spool and fsyncs it (writer thread).
  Status Spool(const std::vector<LedgerRow>& rows) {
    std::string text;
    for (const LedgerRow& r : rows) {
      text += SpoolJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      text += '\n';
    }
    const int fd = ::open(spool_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
      return Internal("cannot open the ledger spool {}: {}", spool_path_, strerror(errno));
    // Gateways sharing a spool file (one directory) append and empty it in turn.
    ::flock(fd, LOCK_EX);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        ::close(fd);
        return Internal("cannot write the ledger spool {}: {}", spool_path_, strerror(errno));
      }
      done += static_cast<size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) return Internal("cannot fsync the ledger spool {}", spool_path_);
    std::lock_guard lock(mu_);
    stats_.rows_spooled += static_cast<int64_t>(rows.size());
    stats_.spool_rows += static_cast<int64_t>(rows.size());
    return Status::Ok();
  }

  // Writes the spooled rows to the database and empties the spool; leaves it
  // as it is while the database is still away (writer thread).
  void Unspool() {
    const int lock_fd = ::open(spool_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) return;
    ::flock(lock_fd, LOCK_EX);  // released by close: no row is appended between read and empty
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{lock_fd};
    std::vector<LedgerRow> rows;
    {
      std::ifstream in(spool_path_);
      std::string line;
      while (std::getline(in, line)) {
        if (auto r = RowOfSpool(line)) rows.push_back(std::move(*r));
      }
    }
    for (size_t i = 0; i < rows.size(); i += kLedgerMaxBatchRows) {
      const size_t n = std::min<size_t>(kLedgerMaxBatchRows, rows.size() - i);
      if (!store_->InsertBatch(std::span<const LedgerRow>(rows.data() + i, n)).ok()) return;
    }
    if (::ftruncate(lock_fd, 0) != 0 || ::fsync(lock_fd) != 0) {
      log::Error("cost ledger: cannot empty the spool {}: {}", spool_path_, strerror(errno));
      return;
    }
    log::Info("cost ledger: {} spooled row(s) written to the database", rows.size());
    std::lock_guard lock(mu_);
    stats_.rows_unspooled += static_cast<int64_t>(rows.size());
    stats_.spool_rows = 0;
  }

  std::unique_ptr<LedgerStore> store_;
  const std::string spool_path_;
  std::chrono::steady_clock::time_point next_unspool_{};  // writer thread only
  mutable std::mutex mu_;
  std::condition_variable wake_;         // rows queued, or stop
  std::condition_variable finished_cv_;  // rows finished (Flush)
  std::deque<Pending> queue_;
  LedgerStats stats_;
  int64_t finished_ = 0;      // rows whose callback returned, in Append order
  int64_t transactions_ = 0;  // of the batch being written (writer thread only)
  bool stop_ = false;
  std::thread writer_;
};

// `brisk cost`: reads only.
class ReadOnlyLedger final : public Ledger {
 public:
  explicit ReadOnlyLedger(std::unique_ptr<LedgerStore> store) : store_(std::move(store)) {}
  void Append(LedgerRow row, DurableCallback durable) override {
    if (durable) {
      durable(
          Status(StatusCode::kUnimplemented,
                 fmt::format("cost ledger opened read-only: row {} not written", row.request_id)));
    }
  }
  void Flush() override {}
  Expected<std::vector<CostGroup>> Query(const CostQuery& q) override { return store_->Query(q); }
  Expected<double> SpendSince(const std::string& name, bool by_feature,
                              int64_t since_unix_ms) override {
    return store_->SpendSince(name, by_feature, since_unix_ms);
  }
  Expected<int64_t> CountRows() override { return store_->CountRows(); }
  LedgerStats Stats() const override { return {}; }
  const char* kind() const override { return store_->kind(); }

 private:
  std::unique_ptr<LedgerStore> store_;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::unique_ptr<Ledger> NewGroupCommitLedger(std::unique_ptr<LedgerStore> store,
                                             std::string spool_path) {
  return std::make_unique<GroupCommitLedger>(std::move(store), std::move(spool_path));
}

std::string RedactLedgerUrl(std::string_view url) {
  std::string out(url);
  // scheme://user:password@host...: the userinfo ends at the last '@' before
  // the query (a password with an unescaped '@' or '/' is still covered).
  if (const size_t scheme_end = out.find("://"); scheme_end != std::string::npos) {
    const size_t start = scheme_end + 3;
    const size_t query = out.find('?', start);
    const size_t at = out.rfind('@', query == std::string::npos ? std::string::npos : query);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... as a URI parameter or a conninfo keyword.
  for (size_t pos = 0; pos < out.size();) {
    size_t i = pos;
    while (i < out.size() && !(i + 9 <= out.size() && IEquals(out.substr(i, 9), "password="))) {
      ++i;
    }
    if (i >= out.size()) break;
    const size_t value = i + 9;
    size_t end = value;
    if (end < out.size() && out[end] == '\'') {
      end = out.find('\'', end + 1);
      end = end == std::string::npos ? out.size() : end + 1;
    } else {
      while (end < out.size() && out[end] != '&' && out[end] != ' ') ++end;
    }
    out.replace(value, end - value, "***");
    pos = value + 3;
  }
  return out;
}

Expected<std::unique_ptr<Ledger>> OpenLedger(const std::string& url, LedgerMode mode,
                                             const std::string& spool_path) {
  if (url.empty()) {
    return InvalidArgument("empty cost ledger URL (a SQLite path or postgresql://...)");
  }
  Expected<std::unique_ptr<LedgerStore>> store = InvalidArgument("unreachable");
  if (StartsWith(url, "postgresql://") || StartsWith(url, "postgres://")) {
    store = OpenPostgresStore(url, mode);
  } else if (StartsWith(url, "sqlite:")) {
    std::string path = url.substr(7);
    if (StartsWith(path, "//"))
      path = path.substr(2);  // sqlite:///abs -> /abs, sqlite://rel -> rel
    store = OpenSqliteStore(path, mode);
  } else if (const size_t colon = url.find("://"); colon != std::string::npos) {
    return InvalidArgument(
        "cost ledger URL '{}': unsupported scheme '{}' (use a SQLite path, sqlite:///path.db or "
        "postgresql://user@host:port/db)",
        RedactLedgerUrl(url), url.substr(0, colon));
  } else {
    store = OpenSqliteStore(url, mode);
  }
  if (!store.ok()) return store.status();
  if (mode == LedgerMode::kReadOnly) {
    return std::unique_ptr<Ledger>(std::make_unique<ReadOnlyLedger>(std::move(store).value()));
  }
  return NewGroupCommitLedger(std::move(store).value(), spool_path);
}

}  // namespace brisk::gateway
