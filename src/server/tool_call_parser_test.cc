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
std::map<int, Call> Assemble(const std::string& text, size_t step, bool* complete) {
  ToolCallParser p;
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
    auto calls = Assemble(text, step, &complete);
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
    auto calls = Assemble(text, step, &complete);
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
  auto calls = Assemble(R"({"name":"f","arguments":{"x":"abc)", 4, &complete);
  EXPECT_FALSE(complete);
  EXPECT_EQ(calls[0].name, "f");
  complete = true;
  Assemble(R"([{"name":"f","arguments":{}})", 4, &complete);
  EXPECT_FALSE(complete);
  // Calls one after another: the second one open is not complete.
  complete = true;
  Assemble("{\"name\":\"f\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n{\"name\":\"g\"", 3,
           &complete);
  EXPECT_FALSE(complete);
}

// tool_choice "auto" with a call marker: calls separated by the template's
// tags; each is its own call, the tags are not arguments. Cut off inside a
// separator, the calls before it are complete.
TEST(ToolCallParserTest, CallsSeparatedByTemplateTags) {
  const std::string sep = "\n</tool_call>\n<tool_call>\n";
  const std::string text = R"({"name":"a","arguments":{"x":"}</tool_call>"}})" + sep +
                           R"({"name":"b","arguments":{"y":[1,2]}})";
  for (size_t step : {1u, 4u, 1000u}) {
    bool complete = false;
    auto calls = Assemble(text, step, &complete);
    ASSERT_EQ(calls.size(), 2u) << step;
    EXPECT_TRUE(complete);
    EXPECT_EQ(calls[0].name, "a");
    EXPECT_EQ(calls[0].args, R"({"x":"}</tool_call>"})");
    EXPECT_EQ(calls[1].name, "b");
    EXPECT_EQ(calls[1].args, R"({"y":[1,2]})");
    auto cut = Assemble(text.substr(0, text.find(sep) + 5), step, &complete);
    EXPECT_EQ(cut.size(), 1u);
    EXPECT_TRUE(complete);
  }
}

}  // namespace
}  // namespace brisk::api
