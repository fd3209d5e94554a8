#include "obs/span_exporter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace brisk {
namespace {

TEST(SpanExporter, OtlpJsonHasTheServerSpanAndOneContiguousChildPerStage) {
  RequestSpan r;
  r.trace = StartTrace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  r.name = "POST /v1/chat/completions";
  r.start = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  r.stages = {{"tokenize", 0.5}, {"prefill", 2}, {"decode", 7.5}};
  r.total_ms = 10;
  r.http_status = 200;
  r.attributes = {{"brisk.model", "smol"}};
  auto j = nlohmann::json::parse(OtlpTracesJson("brisk-serve", {r}));
  const auto& rs = j["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "brisk-serve");
  const auto& spans = rs["scopeSpans"][0]["spans"];
  ASSERT_EQ(spans.size(), 4u);
  const auto& server = spans[0];
  EXPECT_EQ(server["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(server["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(server["spanId"], r.trace.span_id);
  EXPECT_EQ(server["kind"], 2);
  EXPECT_EQ(server["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(server["endTimeUnixNano"], "1700000000010000000");
  EXPECT_EQ(spans[1]["name"], "tokenize");
  EXPECT_EQ(spans[1]["parentSpanId"], r.trace.span_id);
  EXPECT_EQ(spans[1]["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(spans[2]["startTimeUnixNano"], "1700000000000500000");  // where tokenize ended
  EXPECT_EQ(spans[3]["endTimeUnixNano"], "1700000000010000000");
}

TEST(SpanExporter, ANewTraceHasNoParent) {
  RequestSpan r;
  r.trace = StartTrace("");
  auto j = nlohmann::json::parse(OtlpTracesJson("x", {r}));
  EXPECT_FALSE(j["resourceSpans"][0]["scopeSpans"][0]["spans"][0].contains("parentSpanId"));
}

TEST(SpanExporter, RefusesEndpointsItCannotReach) {
  metrics::Registry reg;
  for (const char* bad : {"", "https://collector:4318", "collector:4318", "http://:4318",
                          "http://collector:0", "http://collector:99999", "http://c:12x"}) {
    EXPECT_FALSE(SpanExporter::Create(bad, "x", reg).ok()) << bad;
  }
  EXPECT_TRUE(SpanExporter::Create("http://127.0.0.1:4318/base/", "x", reg).ok());
}

TEST(SpanExporter, ACollectorThatIsDownCostsDroppedSpansNotAHang) {
  metrics::Registry reg;
  {
    // Port 1 on loopback: connection refused at once.
    auto e = SpanExporter::Create("http://127.0.0.1:1", "x", reg);
    ASSERT_TRUE(e.ok());
    for (int i = 0; i < 3; ++i) (*e)->Export(RequestSpan{});
  }  // the destructor drains (or gives up) and joins
  EXPECT_NE(reg.Render().find("brisk_otlp_spans_dropped_total 3"), std::string::npos)
      << reg.Render();
}

}  // namespace
}  // namespace brisk
