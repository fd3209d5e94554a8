#include "obs/metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace brisk::metrics {
namespace {

TEST(MetricsTest, ExpositionTextExact) {
  Registry reg;
  Counter* ok = reg.GetCounter("brisk_requests_total", "Requests finished.",
                               {{"model", "m"}, {"status", "ok"}});
  Counter* err = reg.GetCounter("brisk_requests_total", "Requests finished.",
                                {{"model", "m"}, {"status", "error"}});
  ok->Inc();
  ok->Inc(2);
  err->Inc();
  Gauge* depth = reg.GetGauge("brisk_queue_depth", "Requests waiting.\nBackslash: \\ here.");
  depth->Set(7);
  depth->Add(-2.5);
  Gauge* odd =
      reg.GetGauge("brisk_label_escaping", "Label escaping.", {{"path", "C:\\dir\\\"q\"\nnext"}});
  odd->Set(1);
  const std::vector<double> buckets = {0.25, 1};
  Histogram* ttft =
      reg.GetHistogram("brisk_ttft_seconds", "Time to first token.", buckets, {{"model", "m"}});
  for (double v : {0.125, 0.25, 0.5, 4.0}) ttft->Observe(v);

  EXPECT_EQ(reg.Render(),
            "# HELP brisk_requests_total Requests finished.\n"
            "# TYPE brisk_requests_total counter\n"
            "brisk_requests_total{model=\"m\",status=\"ok\"} 3\n"
            "brisk_requests_total{model=\"m\",status=\"error\"} 1\n"
            "# HELP brisk_queue_depth Requests waiting.\\nBackslash: \\\\ here.\n"
            "# TYPE brisk_queue_depth gauge\n"
            "brisk_queue_depth 4.5\n"
            "# HELP brisk_label_escaping Label escaping.\n"
            "# TYPE brisk_label_escaping gauge\n"
            "brisk_label_escaping{path=\"C:\\\\dir\\\\\\\"q\\\"\\nnext\"} 1\n"
            "# HELP brisk_ttft_seconds Time to first token.\n"
            "# TYPE brisk_ttft_seconds histogram\n"
            "brisk_ttft_seconds_bucket{model=\"m\",le=\"0.25\"} 2\n"
            "brisk_ttft_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
            "brisk_ttft_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
            "brisk_ttft_seconds_sum{model=\"m\"} 4.875\n"
            "brisk_ttft_seconds_count{model=\"m\"} 4\n");
}

TEST(MetricsTest, EmptyRegistryRendersNothing) {
  Registry reg;
  EXPECT_EQ(reg.Render(), "");
}

TEST(MetricsTest, HistogramWithoutLabelsAndExplicitInf) {
  Registry reg;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> buckets = {1, inf};  // trailing +Inf is implicit anyway
  Histogram* h = reg.GetHistogram("lat_seconds", "h", buckets);
  h->Observe(1);  // le is inclusive
  h->Observe(std::nan(""));
  EXPECT_EQ(reg.Render(),
            "# HELP lat_seconds h\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"1\"} 1\n"
            "lat_seconds_bucket{le=\"+Inf\"} 2\n"
            "lat_seconds_sum NaN\n"
            "lat_seconds_count 2\n");
  EXPECT_EQ(h->count(), 2u);
  EXPECT_EQ(h->cumulative_counts(), (std::vector<uint64_t>{1, 2}));
}

TEST(MetricsTest, NumberFormatting) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-17), "-17");
  EXPECT_EQ(FormatValue(123456789012), "123456789012");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1e-7), "1e-07");
  EXPECT_EQ(FormatValue(1e300), "1e+300");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");

  Registry reg;
  reg.GetGauge("g", "g", {{"k", "int"}})->Set(42);
  reg.GetGauge("g", "g", {{"k", "inf"}})->Set(std::numeric_limits<double>::infinity());
  reg.GetGauge("g", "g", {{"k", "nan"}})->Set(std::nan(""));
  reg.GetGauge("g", "g", {{"k", "frac"}})->Set(0.001);
  EXPECT_EQ(reg.Render(),
            "# HELP g g\n# TYPE g gauge\n"
            "g{k=\"int\"} 42\ng{k=\"inf\"} +Inf\ng{k=\"nan\"} NaN\ng{k=\"frac\"} 0.001\n");
}

TEST(MetricsTest, SameNameSameLabelsSamePointer) {
  Registry reg;
  Counter* a = reg.GetCounter("x_total", "x", {{"a", "1"}, {"b", "2"}});
  EXPECT_EQ(reg.GetCounter("x_total", "x", {{"a", "1"}, {"b", "2"}}), a);
  EXPECT_EQ(reg.GetCounter("x_total", "x", {{"b", "2"}, {"a", "1"}}), a);  // order-insensitive
  EXPECT_NE(reg.GetCounter("x_total", "x", {{"a", "1"}, {"b", "3"}}), a);
  Gauge* g = reg.GetGauge("g", "g");
  EXPECT_EQ(reg.GetGauge("g", "g"), g);
  const std::vector<double> b = {1, 2};
  Histogram* h = reg.GetHistogram("h", "h", b);
  EXPECT_EQ(reg.GetHistogram("h", "h", b), h);
  // Pointers survive many later registrations.
  for (int i = 0; i < 1000; ++i)
    reg.GetCounter("x_total", "x", {{"a", "1"}, {"b", std::to_string(i + 10)}});
  a->Inc(5);
  EXPECT_EQ(reg.GetCounter("x_total", "x", {{"a", "1"}, {"b", "2"}})->value(), 5);
}

TEST(MetricsTest, ConcurrentIncIsExact) {
  Registry reg;
  Counter* c = reg.GetCounter("hits_total", "hits");
  const std::vector<double> b = {0.5, 1.5};
  Histogram* h = reg.GetHistogram("obs", "obs", b);
  constexpr int kThreads = 8, kIters = 100000;
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop.load()) {
      std::string text = reg.Render();
      EXPECT_NE(text.find("hits_total"), std::string::npos);
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Concurrent registration of the same series must agree on the pointer.
      EXPECT_EQ(reg.GetCounter("hits_total", "hits"), c);
      Counter* mine = reg.GetCounter("per_thread_total", "p", {{"t", std::to_string(t)}});
      for (int i = 0; i < kIters; ++i) {
        c->Inc();
        mine->Inc();
        h->Observe(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  scraper.join();
  EXPECT_EQ(c->value(), kThreads * kIters);
  EXPECT_EQ(h->count(), uint64_t{kThreads} * kIters);
  EXPECT_EQ(h->sum(), kThreads * kIters);  // integers below 2^53 add exactly
  EXPECT_EQ(h->cumulative_counts(),
            (std::vector<uint64_t>{0, kThreads * kIters, kThreads * kIters}));
  EXPECT_NE(reg.Render().find("hits_total 800000\n"), std::string::npos);
}

TEST(MetricsTest, CallbackGauge) {
  Registry reg;
  Counter* c = reg.GetCounter("c_total", "c");
  int calls = 0;
  reg.AddCallbackGauge("free_blocks", "Free KV blocks.", {{"pool", "main"}}, [&] {
    ++calls;
    // Callbacks run without the registry lock: using the registry is fine.
    return reg.GetCounter("c_total", "c")->value() * 2;
  });
  c->Inc(21);
  EXPECT_EQ(reg.Render(),
            "# HELP c_total c\n# TYPE c_total counter\nc_total 21\n"
            "# HELP free_blocks Free KV blocks.\n# TYPE free_blocks gauge\n"
            "free_blocks{pool=\"main\"} 42\n");
  EXPECT_EQ(calls, 1);
  // Re-registering replaces the function.
  reg.AddCallbackGauge("free_blocks", "Free KV blocks.", {{"pool", "main"}}, [] { return 1.5; });
  EXPECT_NE(reg.Render().find("free_blocks{pool=\"main\"} 1.5\n"), std::string::npos);
  EXPECT_EQ(calls, 1);
  // A throwing callback renders NaN instead of escaping Render().
  reg.AddCallbackGauge("free_blocks", "Free KV blocks.", {{"pool", "main"}},
                       []() -> double { throw std::runtime_error("boom"); });
  EXPECT_NE(reg.Render().find("free_blocks{pool=\"main\"} NaN\n"), std::string::npos);
}

TEST(MetricsTest, LatencyBuckets) {
  for (const auto& b : {LatencyBucketsSeconds(), TokenLatencyBucketsSeconds()}) {
    ASSERT_GE(b.size(), 10u);
    for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  }
  EXPECT_EQ(LatencyBucketsSeconds().front(), 0.001);
  EXPECT_GE(LatencyBucketsSeconds().back(), 60);
  EXPECT_EQ(TokenLatencyBucketsSeconds().front(), 0.001);
  EXPECT_LT(TokenLatencyBucketsSeconds().back(), LatencyBucketsSeconds().back());
}

#ifdef NDEBUG
// Misuse is asserted; release builds hand out a working object that is never
// rendered instead of crashing.
TEST(MetricsTest, MisuseInReleaseIsDetached) {
  Registry reg;
  reg.GetCounter("m_total", "m")->Inc();
  reg.GetCounter("lat_count", "a counter named like a histogram sample")->Inc();
  const std::vector<double> b = {1};
  const std::vector<double> unsorted = {2, 1};
  std::vector<Gauge*> gauges = {
      reg.GetGauge("m_total", "m"),                       // type clash
      reg.GetGauge("bad name", "x"),                      // invalid name
      reg.GetGauge("ok", "x", {{"__reserved", "v"}}),     // invalid label name
      reg.GetGauge("ok", "x", {{"a", "1"}, {"a", "2"}}),  // duplicate label name
  };
  reg.GetCounter("m_total", "other help")->Inc();            // help clash
  reg.GetCounter("m_total", "m", {{"extra", "1"}})->Inc();   // label names differ
  reg.GetHistogram("lat", "h", b)->Observe(1);               // lat_count clash
  reg.GetHistogram("h", "h", b, {{"le", "1"}})->Observe(1);  // reserved label
  reg.GetHistogram("h2", "h", unsorted)->Observe(1);         // bad buckets
  for (Gauge* g : gauges) {
    ASSERT_NE(g, nullptr);
    g->Set(1);
  }
  reg.AddCallbackGauge("ok2", "x", {}, [] { return 1.0; });
  EXPECT_EQ(reg.GetGauge("ok2", "x")->value(), 0);  // callback series has no Gauge
  reg.GetGauge("plain", "x")->Set(3);
  reg.AddCallbackGauge("plain", "x", {}, [] { return 9.0; });  // plain cannot become callback
  EXPECT_EQ(reg.Render(),
            "# HELP m_total m\n# TYPE m_total counter\nm_total 1\n"
            "# HELP lat_count a counter named like a histogram sample\n"
            "# TYPE lat_count counter\nlat_count 1\n"
            "# HELP ok2 x\n# TYPE ok2 gauge\nok2 1\n"
            "# HELP plain x\n# TYPE plain gauge\nplain 3\n");
}
#endif

// --- A tiny checker of the text format, applied to a Render() output. ---

bool IsNameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

// Returns "" if ok, else what is wrong.
std::string ParseName(std::string_view& s, bool colon, std::string* name) {
  size_t i = 0;
  while (i < s.size() && IsNameChar(s[i], i == 0, colon)) ++i;
  if (i == 0) return "expected a name";
  *name = std::string(s.substr(0, i));
  s.remove_prefix(i);
  return "";
}

std::string ParseValue(std::string_view s, double* v) {
  if (s == "+Inf") return *v = std::numeric_limits<double>::infinity(), "";
  if (s == "-Inf") return *v = -std::numeric_limits<double>::infinity(), "";
  if (s == "NaN") return *v = std::nan(""), "";
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (ec != std::errc() || p != s.data() + s.size()) return "bad value '" + std::string(s) + "'";
  return "";
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

// `name{l="v",...} value` with label values escaped as \\, \", \n only.
std::string ParseSample(std::string_view s, Sample* out) {
  if (auto e = ParseName(s, true, &out->name); !e.empty()) return e;
  if (!s.empty() && s[0] == '{') {
    s.remove_prefix(1);
    while (true) {
      std::string ln;
      if (auto e = ParseName(s, false, &ln); !e.empty()) return e;
      if (!s.starts_with("=\"")) return "expected =\"";
      s.remove_prefix(2);
      std::string v;
      while (true) {
        if (s.empty()) return "unterminated label value";
        char c = s[0];
        s.remove_prefix(1);
        if (c == '"') break;
        if (c == '\n') return "raw newline in label value";
        if (c == '\\') {
          if (s.empty()) return "dangling backslash";
          char n = s[0];
          s.remove_prefix(1);
          if (n == 'n')
            v += '\n';
          else if (n == '\\' || n == '"')
            v += n;
          else
            return "bad escape";
        } else {
          v += c;
        }
      }
      if (!out->labels.emplace(ln, v).second) return "duplicate label " + ln;
      if (!s.empty() && s[0] == ',') {
        s.remove_prefix(1);
        continue;
      }
      if (!s.empty() && s[0] == '}') {
        s.remove_prefix(1);
        break;
      }
      return "expected , or }";
    }
  }
  if (!s.starts_with(" ")) return "expected a space before the value";
  s.remove_prefix(1);
  return ParseValue(s, &out->value);
}

// Checks every line and the family structure; returns the problems found.
std::vector<std::string> CheckExposition(const std::string& text) {
  std::vector<std::string> problems;
  if (!text.empty() && text.back() != '\n') problems.push_back("no trailing newline");
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helps;
  std::string current;                        // family of the last TYPE line
  std::map<std::string, double> last_bucket;  // series key -> last cumulative count
  std::map<std::string, double> inf_bucket;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto bad = [&](const std::string& why) {
      problems.push_back(fmt::format("line {}: {}: {}", n, why, line));
    };
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      std::string_view rest = std::string_view(line).substr(7);
      std::string name;
      if (auto e = ParseName(rest, true, &name); !e.empty()) {
        bad(e);
        continue;
      }
      if (!rest.starts_with(" ")) {
        bad("expected a space after the name");
        continue;
      }
      rest.remove_prefix(1);
      if (line[2] == 'H') {
        if (!helps.insert(name).second) bad("second HELP");
      } else {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(std::string(rest))) bad("unknown type");
        if (!types.emplace(name, rest).second) bad("second TYPE");
        current = name;
      }
      continue;
    }
    if (line.empty() || line[0] == '#') {
      bad("unexpected line");
      continue;
    }
    Sample s;
    if (auto e = ParseSample(line, &s); !e.empty()) {
      bad(e);
      continue;
    }
    // The sample must belong to the family of the last TYPE line.
    const std::string& type = types[current];
    std::string suffix = s.name.size() > current.size() ? s.name.substr(current.size()) : "";
    if (!s.name.starts_with(current)) {
      bad("sample outside its family");
      continue;
    }
    if (type == "histogram") {
      if (suffix != "_bucket" && suffix != "_sum" && suffix != "_count")
        bad("bad histogram sample");
      std::map<std::string, std::string> rest = s.labels;
      rest.erase("le");
      std::string key = current;
      for (const auto& [k, v] : rest) key += "," + k + "=" + v;
      if (suffix == "_bucket") {
        if (!s.labels.count("le")) {
          bad("bucket without le");
          continue;
        }
        double le;
        if (!ParseValue(s.labels["le"], &le).empty()) bad("bad le");
        if (s.value < last_bucket[key]) bad("buckets not cumulative");
        last_bucket[key] = s.value;
        if (std::isinf(le)) inf_bucket[key] = s.value;
      } else if (suffix == "_count") {
        if (!inf_bucket.count(key))
          bad("count before the +Inf bucket");
        else if (inf_bucket[key] != s.value)
          bad("count != +Inf bucket");
      }
    } else {
      if (!suffix.empty()) bad("sample name differs from its family");
      if (type == "counter" && s.value < 0) bad("negative counter");
    }
  }
  for (const auto& [name, type] : types) {
    if (!helps.count(name)) problems.push_back("no HELP for " + name);
  }
  return problems;
}

TEST(MetricsTest, RenderPassesFormatChecker) {
  Registry reg;
  reg.GetCounter("brisk_tokens_total", "Tokens.", {{"kind", "prompt"}})->Inc(10);
  reg.GetCounter("brisk_tokens_total", "Tokens.", {{"kind", "generated"}})->Inc(0.5);
  reg.GetGauge("brisk_running", "Running.\\ sequences\nnow")->Set(-3);
  reg.GetGauge("brisk:ratio", "colons are legal in metric names", {{"v", "a\"b\\c\nd,e}f"}})
      ->Set(std::nan(""));
  reg.AddCallbackGauge("brisk_cb", "cb", {}, [] { return 1e-9; });
  const auto ttft_b = LatencyBucketsSeconds();
  const auto tpot_b = TokenLatencyBucketsSeconds();
  for (const char* model : {"a", "b"}) {
    Histogram* ttft = reg.GetHistogram("brisk_ttft_seconds", "TTFT.", ttft_b, {{"model", model}});
    Histogram* tpot = reg.GetHistogram("brisk_tpot_seconds", "TPOT.", tpot_b, {{"model", model}});
    for (int i = 0; i < 1000; ++i) {
      ttft->Observe(i * 0.013);
      tpot->Observe(i * 0.0007);
    }
  }
  reg.GetHistogram("brisk_empty_seconds", "Never observed.", ttft_b);
  const std::string text = reg.Render();
  EXPECT_EQ(CheckExposition(text), std::vector<std::string>{}) << text;

  // The checker itself catches broken text.
  EXPECT_FALSE(CheckExposition("# TYPE x counter\nx{a=\"b} 1\n").empty());
  EXPECT_FALSE(CheckExposition("# HELP x x\n# TYPE x counter\nx 1 2\n").empty());
  EXPECT_FALSE(CheckExposition("# HELP x x\n# TYPE x counter\nx{a=\"\\t\"} 1\n").empty());
  EXPECT_FALSE(CheckExposition("# HELP x x\n# TYPE x histogram\nx_bucket{le=\"1\"} 2\n"
                               "x_bucket{le=\"+Inf\"} 1\nx_count 1\n")
                   .empty());
}

}  // namespace
}  // namespace brisk::metrics
