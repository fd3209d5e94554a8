#include "gateway/gateway_stages.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

using std::chrono::microseconds;
using Clock = GatewayStages::Clock;

// The stages an upstream exchange begins with: admitted, routed and connected
// at these microseconds after t0.
void StartExchange(GatewayStages& s, Clock::time_point t0, int started_us, int picked_us,
                   int connected_us) {
  s.Started(t0 + microseconds(started_us));
  s.Picked(t0 + microseconds(picked_us));
  s.Connected(t0 + microseconds(connected_us));
}

TEST(GatewayStages, UpstreamStagesSplitTheExchangeAndAllAddUpToTotal) {
  const Clock::time_point t0 = Clock::now();
  GatewayStages s(t0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  StartExchange(s, t0, 100, 150, 400);
  // The engine's head (a stream's: tokenize only), then its trailer.
  s.UpstreamTiming("tokenize;dur=0.5");
  s.UpstreamTiming(
      "tokenize;dur=0.5, queue;dur=0.1, prefill;dur=3, decode;dur=5, write;dur=0.05, "
      "total;dur=8.65");
  s.UpstreamTiming("");  // no engine stages: ignored
  s.UpstreamDone(t0 + microseconds(9400));
  const auto& stages = s.Finish(t0 + microseconds(9600));
  std::vector<std::string> names;
  for (const auto& st : stages) names.push_back(st.name);
  EXPECT_EQ(names, (std::vector<std::string>{"admission", "route", "connect", "tokenize", "queue",
                                             "prefill", "decode", "network", "write"}));
  EXPECT_NEAR(stages[0].ms, 0.1, 1e-9);
  EXPECT_NEAR(stages[2].ms, 0.25, 1e-9);
  EXPECT_NEAR(stages[7].ms, 9.0 - 8.6, 1e-9);  // exchange 9 ms, engine stages 8.6 ms
  EXPECT_NEAR(stages[8].ms, 0.2, 1e-9);
  EXPECT_NEAR(s.total_ms(), 9.6, 1e-9);
  EXPECT_NEAR(StagesTotalMs(stages), s.total_ms(), 1e-9);
  EXPECT_EQ(s.FinishedValue().substr(0, 40), "admission;dur=0.1, route;dur=0.05, conne");
  EXPECT_NE(s.FinishedValue().find(", total;dur=9.6"), std::string::npos);
  EXPECT_EQ(s.trace().trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(s.trace().parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(s.UpstreamTraceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.trace().span_id + "-01");
}

TEST(GatewayStages, ARetryStartsTheUpstreamPartAfresh) {
  const Clock::time_point t0 = Clock::now();
  GatewayStages s(t0, "not a traceparent");
  EXPECT_TRUE(s.trace().parent_span_id.empty());
  s.Started(t0);
  s.Picked(t0 + microseconds(100));
  s.UpstreamTiming("tokenize;dur=50");  // from a replica that then failed
  s.Picked(t0 + microseconds(200));     // no connect reported: a reused connection
  s.UpstreamDone(t0 + microseconds(1200));
  const auto& stages = s.Finish(t0 + microseconds(1300));
  ASSERT_EQ(stages.size(), 5u);  // admission, route, connect, network, write
  EXPECT_EQ(stages[2].name, "connect");
  EXPECT_DOUBLE_EQ(stages[2].ms, 0);
  EXPECT_EQ(stages[3].name, "network");
  EXPECT_NEAR(stages[3].ms, 1.0, 1e-9);
  EXPECT_NEAR(StagesTotalMs(stages), 1.3, 1e-9);
}

TEST(GatewayStages, HeadValueHasWhatIsKnownBeforeTheFirstByte) {
  const Clock::time_point t0 = Clock::now();
  GatewayStages s(t0, "");
  StartExchange(s, t0, 10, 20, 30);
  s.UpstreamTiming("tokenize;dur=0.25");
  EXPECT_EQ(s.HeadValue(t0 + microseconds(40)),
            "admission;dur=0.01, route;dur=0.01, connect;dur=0.01, tokenize;dur=0.25");
}

}  // namespace
}  // namespace brisk::gateway
