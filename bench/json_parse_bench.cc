// Request-body JSON parsing time against the number of object keys:
// nlohmann's own ordered_json parser (what ParseRequest used before) searches
// the keys so far on every insert, so its time grows with keys^2;
// ParseStrictJson (server/strict_json.h) is linear. Also ParseRequest on the
// hostile bodies of tests/e2e/attacks.py, now rejected at the caps, and a flat
// array of token ids, where both parsers are linear, for the constant factor.
//   json_parse_bench --benchmark_filter='Keys'
// Counters: keys_per_s (or values_per_s), bytes_per_s of body text.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "server/openai_request.h"
#include "server/strict_json.h"

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

// {"0":0,"1":0,...}: about 10 bytes a key at 100,000 keys.
std::string ObjectWithKeys(int64_t n, std::string_view value = "0") {
  std::string s = "{";
  for (int64_t i = 0; i < n; ++i) s += fmt::format("{}\"{}\":{}", i ? "," : "", i, value);
  return s + "}";
}

std::string TokenIds(int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += fmt::format("{}{}", i ? "," : "", i % 50000);
  return s + "]";
}

void SetRates(benchmark::State& state, const std::string& text, int64_t items,
              const char* items_name) {
  state.counters[items_name] =
      benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_s"] = benchmark::Counter(static_cast<double>(text.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

// Before: what ParseRequest did before ParseStrictJson.
void BM_NlohmannOrderedKeys(benchmark::State& state) {
  const std::string text = ObjectWithKeys(state.range(0));
  for (auto _ : state) {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    benchmark::DoNotOptimize(j);
  }
  SetRates(state, text, state.range(0), "keys_per_s");
}
BENCHMARK(BM_NlohmannOrderedKeys)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 15)
    ->Unit(benchmark::kMillisecond);

// After: the same documents, caps raised so that the whole object is built.
void BM_StrictKeys(benchmark::State& state) {
  const std::string text = ObjectWithKeys(state.range(0));
  JsonLimits limits;
  limits.max_object_members = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    auto r = ParseStrictJson(text, limits);
    if (!std::holds_alternative<Json>(r)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(r);
  }
  SetRates(state, text, state.range(0), "keys_per_s");
}
BENCHMARK(BM_StrictKeys)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 15)
    ->Arg(100000)
    ->Arg(200000)
    ->Unit(benchmark::kMillisecond);

// The issue's bodies through the whole request parser: 100,000 or 200,000
// keys in logit_bias, 60,000 in metadata, 100,000 null keys in a message.
// Each is now a 400 at the field's cap.
void BM_ParseRequestManyKeys(benchmark::State& state) {
  const int64_t n = state.range(1);
  const std::string chat = R"({"model":"m","messages":[{"role":"user","content":"hi")";
  std::string body;
  switch (state.range(0)) {
    case 0: body = chat + R"(}],"logit_bias":)" + ObjectWithKeys(n) + "}"; break;
    case 1: body = chat + R"(}],"metadata":)" + ObjectWithKeys(n, R"("v")") + "}"; break;
    default: body = chat + "," + ObjectWithKeys(n, "null").substr(1) + "]}"; break;
  }
  for (auto _ : state) {
    auto r = api::ParseRequest(api::Endpoint::kChatCompletions, body);
    if (!std::holds_alternative<api::ApiError>(r)) state.SkipWithError("expected a 400");
    benchmark::DoNotOptimize(r);
  }
  SetRates(state, body, n, "keys_per_s");
}
BENCHMARK(BM_ParseRequestManyKeys)
    ->ArgNames({"field", "keys"})  // field 0 = logit_bias, 1 = metadata, 2 = messages[0]
    ->Args({0, 100000})
    ->Args({0, 200000})
    ->Args({1, 60000})
    ->Args({2, 100000})
    ->Unit(benchmark::kMillisecond);

// A flat array, linear for both parsers: the builder's constant factor.
void BM_TokenIds(benchmark::State& state) {
  const std::string text = TokenIds(state.range(1));
  for (auto _ : state) {
    if (state.range(0) == 0) {
      Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      benchmark::DoNotOptimize(j);
    } else {
      auto r = ParseStrictJson(text, {});
      benchmark::DoNotOptimize(r);
    }
  }
  SetRates(state, text, state.range(1), "values_per_s");
}
BENCHMARK(BM_TokenIds)
    ->ArgNames({"strict", "ids"})
    ->Args({0, 1 << 18})
    ->Args({1, 1 << 18})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace brisk

BENCHMARK_MAIN();
