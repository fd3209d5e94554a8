#include "obs/trace_context.h"

#include <gtest/gtest.h>

#include <set>

namespace brisk {
namespace {

constexpr std::string_view kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, ParsesAValidVersion00Header) {
  auto p = ParseTraceparent(kValid);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(p->parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(p->flags, 0x01);
  EXPECT_EQ(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->flags, 0);
}

TEST(TraceContext, RejectsEveryMalformedHeader) {
  for (std::string_view bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx",  // future fields on v00
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // other version
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // invalid version
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero parent id
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",     // dash misplaced
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",     // non-hex flags
           "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",     // non-hex trace id
           " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // padding
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",     // separators
       }) {
    EXPECT_FALSE(ParseTraceparent(bad)) << bad;
  }
}

TEST(TraceContext, StartTraceJoinsTheCallersTrace) {
  TraceContext c = StartTrace(kValid);
  EXPECT_EQ(c.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c.parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(c.span_id.size(), 16u);
  EXPECT_NE(c.span_id, "00f067aa0ba902b7");
  EXPECT_EQ(c.Traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-" + c.span_id + "-01");
  // What we send back parses.
  auto back = ParseTraceparent(c.Traceparent());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->parent_id, c.span_id);
}

TEST(TraceContext, StartTraceBeginsANewTraceOnABadHeader) {
  TraceContext c = StartTrace("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
  EXPECT_EQ(c.trace_id.size(), 32u);
  EXPECT_NE(c.trace_id, "00000000000000000000000000000000");
  EXPECT_TRUE(c.parent_span_id.empty());
  EXPECT_EQ(c.flags, 0x01);
  EXPECT_TRUE(ParseTraceparent(c.Traceparent()));
}

TEST(TraceContext, ChildKeepsTheTraceAndNamesItsParent) {
  TraceContext c = StartTrace(kValid);
  TraceContext child = c.Child();
  EXPECT_EQ(child.trace_id, c.trace_id);
  EXPECT_EQ(child.parent_span_id, c.span_id);
  EXPECT_NE(child.span_id, c.span_id);
}

TEST(TraceContext, NewIdsAreHexAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string t = NewTraceId();
    ASSERT_EQ(t.size(), 32u);
    ASSERT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(NewSpanId().size(), 16u);
}

}  // namespace
}  // namespace brisk
