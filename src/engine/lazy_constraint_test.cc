#include "engine/lazy_constraint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/token_constraint.h"

namespace brisk {
namespace {

const ConstraintTrigger kMarker{"<tool_call>", false, false};
const ConstraintTrigger kJsonStart{"{\"name\"", true, true};

struct Streamed {
  std::string content;
  std::string constrained;
  int triggered_at = -1;  // index of the piece that fired
};

Streamed Stream(const ConstraintTrigger& t, const std::vector<std::string>& pieces) {
  LazyTriggerMatcher m(t);
  Streamed s;
  for (size_t i = 0; i < pieces.size(); ++i) {
    LazyTriggerMatcher::Result r = m.Push(pieces[i]);
    s.content += r.content;
    s.constrained += r.constrained;
    if (r.triggered) {
      EXPECT_EQ(s.triggered_at, -1);
      s.triggered_at = static_cast<int>(i);
    }
  }
  s.content += m.Flush();
  return s;
}

TEST(LazyTriggerMatcherTest, NoTriggerIsAllContent) {
  Streamed s = Stream(kMarker, {"Hello", " world", "."});
  EXPECT_EQ(s.content, "Hello world.");
  EXPECT_EQ(s.constrained, "");
  EXPECT_EQ(s.triggered_at, -1);
}

TEST(LazyTriggerMatcherTest, TriggerSplitAcrossPieces) {
  Streamed s = Stream(kMarker, {"<tool", "_ca", "ll>", "{\"name\"", ":\"f\"}"});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.triggered_at, 2);
  EXPECT_EQ(s.constrained, "{\"name\":\"f\"}");  // the marker itself is dropped
}

TEST(LazyTriggerMatcherTest, TriggerAfterSomeText) {
  Streamed s = Stream(kMarker, {"Let me check.", "\n<tool_call>\n{"});
  EXPECT_EQ(s.content, "Let me check.\n");
  EXPECT_EQ(s.triggered_at, 1);
  EXPECT_EQ(s.constrained, "\n{");
}

TEST(LazyTriggerMatcherTest, HoldsBackAPartialTriggerThenReleasesIt) {
  LazyTriggerMatcher m(kMarker);
  auto r = m.Push("a <tool");
  EXPECT_EQ(r.content, "a ");
  EXPECT_EQ(m.held_bytes(), 5u);
  r = m.Push("s> b");  // "<tools>" is not the trigger: content after all
  EXPECT_EQ(r.content, "<tools> b");
  EXPECT_FALSE(r.triggered);
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(LazyTriggerMatcherTest, PartialTriggerAtTheEndIsFlushedAsContent) {
  Streamed s = Stream(kMarker, {"see ", "<tool_c"});
  EXPECT_EQ(s.content, "see <tool_c");
  EXPECT_EQ(s.triggered_at, -1);
}

TEST(LazyTriggerMatcherTest, AfterTheTriggerEverythingIsConstrained) {
  LazyTriggerMatcher m(kMarker);
  EXPECT_TRUE(m.Push("<tool_call>").triggered);
  auto r = m.Push("<tool_call> x");
  EXPECT_FALSE(r.triggered);
  EXPECT_EQ(r.content, "");
  EXPECT_EQ(r.constrained, "<tool_call> x");
  EXPECT_EQ(m.Flush(), "");
}

TEST(LazyTriggerMatcherTest, JsonStartKeepsTheTriggerBytes) {
  Streamed s = Stream(kJsonStart, {"{\"", "name", "\":", " \"get"});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.triggered_at, 2);
  EXPECT_EQ(s.constrained, "{\"name\": \"get");
}

TEST(LazyTriggerMatcherTest, JsonStartDropsLeadingWhitespace) {
  Streamed s = Stream(kJsonStart, {"\n ", "{\"name\":"});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.constrained, "{\"name\":");
}

TEST(LazyTriggerMatcherTest, JsonStartOnlyAtTheStart) {
  Streamed s = Stream(kJsonStart, {"Sure: ", "{\"name\":\"f\"}"});
  EXPECT_EQ(s.content, "Sure: {\"name\":\"f\"}");
  EXPECT_EQ(s.triggered_at, -1);
}

TEST(LazyTriggerMatcherTest, JsonStartOtherJsonIsContent) {
  Streamed s = Stream(kJsonStart, {"{\"", "city\": 1}"});
  EXPECT_EQ(s.content, "{\"city\": 1}");
  EXPECT_EQ(s.triggered_at, -1);
  // Whitespace only, then the end: flushed as it came.
  EXPECT_EQ(Stream(kJsonStart, {" ", "\n"}).content, " \n");
  EXPECT_EQ(Stream(kJsonStart, {"{\"na"}).content, "{\"na");
}

// Parallel calls on a template without a marker: an array of calls at the
// start is a trigger too.
TEST(LazyTriggerMatcherTest, JsonStartAlternativeArray) {
  ConstraintTrigger t = kJsonStart;
  t.alt_text = "[{\"name\"";
  Streamed s = Stream(t, {" [", "{\"na", "me\": \"f\"}]"});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.triggered_at, 2);
  EXPECT_EQ(s.constrained, "[{\"name\": \"f\"}]");
  // The object still fires; other arrays are content.
  EXPECT_EQ(Stream(t, {"{\"name\""}).constrained, "{\"name\"");
  s = Stream(t, {"[", "1, 2]"});
  EXPECT_EQ(s.content, "[1, 2]");
  EXPECT_EQ(s.triggered_at, -1);
  EXPECT_EQ(Stream(t, {"[{\"city\""}).content, "[{\"city\"");
  // Without the alternative an array is content.
  EXPECT_EQ(Stream(kJsonStart, {"[{\"name\""}).content, "[{\"name\"");
}

TEST(LazyTriggerMatcherTest, AdvanceAcceptedStopsAtTheFirstRejectedByte) {
  ConstraintSpec spec;
  spec.kind = ConstraintSpec::Kind::kJsonSchema;
  spec.schema = R"({"type":"object","properties":{"name":{"const":"f"}},"required":["name"],
                   "additionalProperties":false})";
  auto c = CompileConstraint(spec);
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::unique_ptr<TokenConstraint> m = MakeTokenConstraint(*c);
  // Compact JSON: the space after the colon is not accepted.
  EXPECT_EQ(AdvanceAccepted(m.get(), "{\"name\": \"f\"}"), 8u);
  EXPECT_TRUE(m->AdvanceBytes("\"f\"}"));
  EXPECT_TRUE(m->CanEnd());
}

}  // namespace
}  // namespace brisk
