#include "server/tool_call_parser.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace brisk::api {
namespace {

struct Call {
  std::string name, args;
};

// Feeds `text` in pieces of `step` bytes; returns the assembled calls.
std::map<int, Call> Assemble(bool array, const std::string& text, size_t step, bool* complete) {
  ToolCallParser p(array);
  std::map<int, Call> calls;
  for (size_t i = 0; i < text.size(); i += step) {
    std::vector<ToolCallDelta> d;
    p.Feed(std::string_view(text).substr(i, step), &d);
    for (const auto& x : d) {
      if (!x.name.empty()) {
        EXPECT_TRUE(calls[x.index].name.empty()) << "name sent twice";
        calls[x.index].name = x.name;
      }
      EXPECT_FALSE(calls[x.index].name.empty()) << "arguments before the name";
      calls[x.index].args += x.arguments;
    }
  }
  *complete = p.complete();
  return calls;
}

TEST(ToolCallParserTest, OneCallAnySplit) {
  const std::string text =
      R"({"name":"get_weather","arguments":{"city":"Pa}ris \"x\" {[","n":[1,{"a":2}]}})";
  for (size_t step : {1u, 2u, 3u, 7u, 1000u}) {
    bool complete = false;
    auto calls = Assemble(false, text, step, &complete);
    ASSERT_EQ(calls.size(), 1u) << step;
    EXPECT_TRUE(complete);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].args, R"({"city":"Pa}ris \"x\" {[","n":[1,{"a":2}]})");
  }
}

TEST(ToolCallParserTest, ParallelCallsAndScalarArguments) {
  const std::string text =
      R"([{"name":"a","arguments":{}},{"name":"b-2","arguments":{"q":"]"}},{"name":"c","arguments":3}])";
  for (size_t step : {1u, 5u, 1000u}) {
    bool complete = false;
    auto calls = Assemble(true, text, step, &complete);
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_TRUE(complete);
    EXPECT_EQ(calls[0].name, "a");
    EXPECT_EQ(calls[0].args, "{}");
    EXPECT_EQ(calls[1].name, "b-2");
    EXPECT_EQ(calls[1].args, R"({"q":"]"})");
    EXPECT_EQ(calls[2].args, "3");
  }
}

TEST(ToolCallParserTest, CutOffOutputIsNotComplete) {
  bool complete = true;
  auto calls = Assemble(false, R"({"name":"f","arguments":{"x":"abc)", 4, &complete);
  EXPECT_FALSE(complete);
  EXPECT_EQ(calls[0].name, "f");
  complete = true;
  Assemble(true, R"([{"name":"f","arguments":{}})", 4, &complete);
  EXPECT_FALSE(complete);
}

}  // namespace
}  // namespace brisk::api
