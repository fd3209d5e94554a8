#include "obs/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

namespace brisk::metrics {

void Counter::Inc(double v) {
  assert(v >= 0 && "counters only go up");
  if (!(v >= 0)) return;  // also drops NaN
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::span<const double> upper_bounds)
    : bounds_(upper_bounds.begin(), upper_bounds.end()) {
  if (!bounds_.empty() && std::isinf(bounds_.back()) && bounds_.back() > 0) bounds_.pop_back();
  for (size_t i = 0; i < bounds_.size(); ++i) {
    assert(std::isfinite(bounds_[i]) && "histogram bounds must be finite");
    assert((i == 0 || bounds_[i - 1] < bounds_[i]) && "histogram bounds must increase");
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // First bound >= v; NaN compares false everywhere so it is sent to +Inf
  // explicitly (lower_bound would put it in bucket 0).
  size_t i = std::isnan(v)
                 ? bounds_.size()
                 : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                       bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

uint64_t Histogram::count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) n += counts_[i].load(std::memory_order_relaxed);
  return n;
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    n += counts_[i].load(std::memory_order_relaxed);
    out[i] = n;
  }
  return out;
}

// Immutable after creation except `callback`, which is guarded by mu_.
struct Registry::Series {
  std::string label_text;  // `a="x",b="y"`, escaped, no braces
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::shared_ptr<const std::function<double()>> callback;
};

// Everything but `series` and `by_labels` is immutable after creation.
struct Registry::Family {
  std::string name;
  std::string help;
  Type type;
  std::vector<double> buckets;                  // histograms only, as given
  std::vector<std::string> label_names;         // sorted; every series has these
  std::vector<std::unique_ptr<Series>> series;  // creation order
  std::map<Labels, Series*> by_labels;          // key: labels sorted by name
};

namespace {

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Label values escape backslash, double quote and newline.
void AppendLabelValue(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

// HELP text escapes backslash and newline only.
void AppendHelp(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

const char* TypeName(int type) {
  switch (type) {
    case 0: return "counter";
    case 1: return "gauge";
    default: return "histogram";
  }
}

// Sample names a family may write; two families must not share one.
std::vector<std::string> SampleNames(std::string_view name, bool histogram) {
  std::string n(name);
  if (!histogram) return {n};
  return {n, n + "_bucket", n + "_sum", n + "_count"};
}

bool ValidBuckets(std::span<const double> b) {
  for (size_t i = 0; i < b.size(); ++i) {
    bool trailing_inf = i + 1 == b.size() && std::isinf(b[i]) && b[i] > 0;
    if (!std::isfinite(b[i]) && !trailing_inf) return false;
    if (i > 0 && !(b[i - 1] < b[i])) return false;
  }
  return true;
}

bool SameBuckets(std::span<const double> a, std::span<const double> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Integral values below 2^53 print exactly, without an exponent; this also
  // turns -0 into "0".
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);  // shortest representation that round-trips
}

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Series* Registry::FindOrCreate(Type type, std::string_view name, std::string_view help,
                                         std::span<const double> buckets, const Labels& labels,
                                         bool* created) {
  *created = false;
  Labels key = labels;
  std::sort(key.begin(), key.end());
  std::vector<std::string> label_names;
  for (size_t i = 0; i < key.size(); ++i) {
    const std::string& ln = key[i].first;
    if (!IsLabelName(ln) || (type == Type::kHistogram && ln == "le")) return nullptr;
    if (i > 0 && key[i - 1].first == ln) return nullptr;  // duplicate label name
    label_names.push_back(ln);
  }

  Family* fam = nullptr;
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) {
    fam = it->second;
    if (fam->type != type || fam->help != help || fam->label_names != label_names) return nullptr;
    if (type == Type::kHistogram && !SameBuckets(fam->buckets, buckets)) return nullptr;
    if (auto s = fam->by_labels.find(key); s != fam->by_labels.end()) return s->second;
  } else {
    if (!IsMetricName(name)) return nullptr;
    if (type == Type::kHistogram && !ValidBuckets(buckets)) return nullptr;
    std::vector<std::string> samples = SampleNames(name, type == Type::kHistogram);
    for (const auto& s : samples) {
      if (sample_names_.count(s)) return nullptr;
    }
    auto owned = std::make_unique<Family>();
    fam = owned.get();
    fam->name = std::string(name);
    fam->help = std::string(help);
    fam->type = type;
    fam->buckets.assign(buckets.begin(), buckets.end());
    fam->label_names = std::move(label_names);
    families_.push_back(std::move(owned));
    by_name_.emplace(fam->name, fam);
    for (auto& s : samples) sample_names_.insert(std::move(s));
  }

  auto series = std::make_unique<Series>();
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) series->label_text += ',';
    series->label_text += labels[i].first;
    series->label_text += "=\"";
    AppendLabelValue(series->label_text, labels[i].second);
    series->label_text += '"';
  }
  switch (type) {
    case Type::kCounter: series->counter = std::make_unique<Counter>(); break;
    case Type::kGauge: series->gauge = std::make_unique<Gauge>(); break;
    case Type::kHistogram: series->histogram = std::make_unique<Histogram>(buckets); break;
  }
  Series* out = series.get();
  fam->series.push_back(std::move(series));
  fam->by_labels.emplace(std::move(key), out);
  *created = true;
  return out;
}

Registry::Series* Registry::Detached(Type type, std::span<const double> buckets) {
  auto series = std::make_unique<Series>();
  switch (type) {
    case Type::kCounter: series->counter = std::make_unique<Counter>(); break;
    case Type::kGauge: series->gauge = std::make_unique<Gauge>(); break;
    case Type::kHistogram:
      // Bad bounds may be why we are here; an empty layout is always valid.
      series->histogram =
          std::make_unique<Histogram>(ValidBuckets(buckets) ? buckets : std::span<const double>());
      break;
  }
  detached_.push_back(std::move(series));
  return detached_.back().get();
}

Counter* Registry::GetCounter(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  bool created;
  Series* s = FindOrCreate(Type::kCounter, name, help, {}, labels, &created);
  assert(s && "metrics misuse: see Registry::GetCounter contract");
  if (!s) s = Detached(Type::kCounter, {});
  return s->counter.get();
}

Gauge* Registry::GetGauge(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  bool created;
  Series* s = FindOrCreate(Type::kGauge, name, help, {}, labels, &created);
  // A callback gauge series has no Gauge object to hand out.
  assert(s && s->gauge && "metrics misuse: see Registry::GetGauge contract");
  if (!s || !s->gauge) s = Detached(Type::kGauge, {});
  return s->gauge.get();
}

Histogram* Registry::GetHistogram(std::string_view name, std::string_view help,
                                  std::span<const double> buckets, const Labels& labels) {
  std::lock_guard lock(mu_);
  bool created;
  Series* s = FindOrCreate(Type::kHistogram, name, help, buckets, labels, &created);
  assert(s && "metrics misuse: see Registry::GetHistogram contract");
  if (!s) s = Detached(Type::kHistogram, buckets);
  return s->histogram.get();
}

void Registry::AddCallbackGauge(std::string_view name, std::string_view help, const Labels& labels,
                                std::function<double()> fn) {
  std::lock_guard lock(mu_);
  bool created;
  Series* s = FindOrCreate(Type::kGauge, name, help, {}, labels, &created);
  if (s && created) s->gauge.reset();  // rendered from fn only
  // An existing series with a Gauge object came from GetGauge.
  assert(s && !s->gauge && "metrics misuse: see Registry::AddCallbackGauge contract");
  if (!s || s->gauge) return;
  s->callback = std::make_shared<const std::function<double()>>(std::move(fn));
}

std::string Registry::Render() const {
  // Snapshot the structure under the lock, then format (and run callbacks)
  // without it: Family/Series objects never move and their rendered fields
  // never change, so raw pointers stay valid.
  struct SeriesView {
    const Series* series;
    std::shared_ptr<const std::function<double()>> callback;
  };
  struct FamilyView {
    const Family* family;
    std::vector<SeriesView> series;
  };
  std::vector<FamilyView> snapshot;
  {
    std::lock_guard lock(mu_);
    snapshot.reserve(families_.size());
    for (const auto& f : families_) {
      FamilyView fv{f.get(), {}};
      fv.series.reserve(f->series.size());
      for (const auto& s : f->series) fv.series.push_back({s.get(), s->callback});
      snapshot.push_back(std::move(fv));
    }
  }

  std::string out;
  auto sample = [&out](std::string_view name, std::string_view labels, std::string_view extra,
                       double v) {
    out += name;
    if (!labels.empty() || !extra.empty()) {
      out += '{';
      out += labels;
      if (!labels.empty() && !extra.empty()) out += ',';
      out += extra;
      out += '}';
    }
    out += ' ';
    out += FormatValue(v);
    out += '\n';
  };

  for (const FamilyView& fv : snapshot) {
    const Family& f = *fv.family;
    out += "# HELP ";
    out += f.name;
    out += ' ';
    AppendHelp(out, f.help);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += TypeName(static_cast<int>(f.type));
    out += '\n';
    for (const SeriesView& sv : fv.series) {
      const Series& s = *sv.series;
      switch (f.type) {
        case Type::kCounter: sample(f.name, s.label_text, "", s.counter->value()); break;
        case Type::kGauge: {
          double v = 0;
          if (sv.callback) {
            try {
              v = (*sv.callback)();
            } catch (...) {
              v = std::nan("");
            }
          } else {
            v = s.gauge->value();
          }
          sample(f.name, s.label_text, "", v);
          break;
        }
        case Type::kHistogram: {
          const Histogram& h = *s.histogram;
          std::vector<uint64_t> cum = h.cumulative_counts();
          std::string bucket_name = f.name + "_bucket";
          std::span<const double> bounds = h.upper_bounds();
          for (size_t i = 0; i < cum.size(); ++i) {
            std::string le = "le=\"";
            le += i < bounds.size() ? FormatValue(bounds[i]) : "+Inf";
            le += '"';
            sample(bucket_name, s.label_text, le, static_cast<double>(cum[i]));
          }
          sample(f.name + "_sum", s.label_text, "", h.sum());
          sample(f.name + "_count", s.label_text, "", static_cast<double>(cum.back()));
          break;
        }
      }
    }
  }
  return out;
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
          1,     2.5,   5,    7.5,  10,   20,   40,   60,  120,  300, 600};
}

std::vector<double> TokenLatencyBucketsSeconds() {
  return {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
          0.1,   0.15,   0.2,   0.3,    0.4,  0.5,   0.75, 1,     2.5,  5,    10};
}

}  // namespace brisk::metrics
