// Prometheus metrics: a small thread-safe registry rendered in the text
// exposition format 0.0.4 (what GET /metrics serves).
//
//   metrics::Registry reg;
//   auto* done = reg.GetCounter("brisk_requests_total", "Requests finished.",
//                               {{"model", "smollm2"}, {"status", "ok"}});
//   auto* ttft = reg.GetHistogram("brisk_ttft_seconds", "Time to first token.",
//                                 metrics::LatencyBucketsSeconds());
//   done->Inc();            // hot path: one atomic add, no lock
//   ttft->Observe(0.042);   // hot path: bucket search + two atomic adds
//   std::string body = reg.Render();
//
// Get* takes the registry lock; call it once at setup and keep the pointer.
// Inc/Set/Add/Observe never lock and are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace brisk::metrics {

// Content-Type for a Render() body.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// Label name/value pairs. Names match [a-zA-Z_][a-zA-Z0-9_]* and do not start
// with "__"; values are any UTF-8. Order is kept for rendering but does not
// matter for identity: {a,b} and {b,a} are the same series.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Monotonic counter. Names conventionally end in "_total".
class Counter {
 public:
  // v must be >= 0 (asserted; ignored in release builds).
  void Inc(double v = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Fixed-bucket histogram. Bucket i counts observations v <= upper_bounds()[i]
// (Prometheus "le" semantics); a last +Inf bucket is implicit. NaN lands in
// +Inf only. A scrape concurrent with Observe may see sum() one observation
// apart from the bucket counts; count() always equals the +Inf bucket.
class Histogram {
 public:
  // upper_bounds: finite and strictly increasing (asserted); a trailing +Inf
  // is dropped since it is implicit.
  explicit Histogram(std::span<const double> upper_bounds);

  void Observe(double v);
  uint64_t count() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  std::span<const double> upper_bounds() const { return bounds_; }
  // Size upper_bounds().size() + 1: element i = observations <= bound i, the
  // last element (+Inf) = count().
  std::vector<uint64_t> cumulative_counts() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Same name + same labels returns the same object; pointers stay valid for
  // the registry's life. A name reused with a different type, help text or
  // bucket layout, an invalid metric/label name, a label set whose names
  // differ from the family's first series, or a sample name clash (counter
  // "x_count" next to histogram "x") is a programming error: asserted, and in
  // release builds the call returns a working object that is never rendered.
  Counter* GetCounter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge* GetGauge(std::string_view name, std::string_view help, const Labels& labels = {});
  // "le" is reserved as a label name.
  Histogram* GetHistogram(std::string_view name, std::string_view help,
                          std::span<const double> buckets, const Labels& labels = {});

  // A gauge computed at scrape time. fn is called from Render() on the
  // scraping thread without the registry lock held (it may use the
  // registry), so it must be thread-safe and should be cheap. Registering the
  // same name + labels again replaces fn; a series made by GetGauge cannot
  // become a callback or back (misuse, as above). An exception from fn
  // renders NaN.
  void AddCallbackGauge(std::string_view name, std::string_view help, const Labels& labels,
                        std::function<double()> fn);

  // The exposition text: families in registration order, series within a
  // family in creation order. Empty registry => "".
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series;
  struct Family;

  // Finds or creates the series (*created says which); nullptr on misuse
  // (the caller then hands out a detached object). Requires mu_.
  Series* FindOrCreate(Type type, std::string_view name, std::string_view help,
                       std::span<const double> buckets, const Labels& labels, bool* created);
  Series* Detached(Type type, std::span<const double> buckets);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // registration order
  std::unordered_map<std::string, Family*> by_name_;
  std::unordered_set<std::string> sample_names_;   // every name a sample line may use
  std::vector<std::unique_ptr<Series>> detached_;  // misuse in release builds
};

// Buckets (seconds) for request-level latencies: TTFT, queue time, end to
// end. vLLM's TTFT layout (1 ms .. 10 s) with a tail to 600 s, the default
// request timeout.
std::vector<double> LatencyBucketsSeconds();
// Finer buckets (seconds) for per-token latencies: TPOT, inter-token latency.
// vLLM's ITL layout extended down to 1 ms for small models on fast hardware.
std::vector<double> TokenLatencyBucketsSeconds();

// Text format number: integers without exponent or ".0" ("3"), otherwise the
// shortest round-trip form ("0.25", "1e-07"), and "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);

}  // namespace brisk::metrics
