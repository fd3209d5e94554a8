#include "server/ignored_fields.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisk {
namespace {

TEST(IgnoredFieldsTest, HeaderListsNamesPercentEncoded) {
  EXPECT_EQ(IgnoredFieldsHeaderValue({}), "");
  const std::vector<std::string> names = {"top_a", "messages.reasoning_content", "a,b c",
                                          "x\r\nSet-Cookie: y", "\xC3\xA9"};
  EXPECT_EQ(IgnoredFieldsHeaderValue(names),
            "top_a,messages.reasoning_content,a%2Cb%20c,x%0D%0ASet-Cookie%3A%20y,%C3%A9");
}

TEST(IgnoredFieldsTest, HeaderIsBounded) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back(std::string(60, 'a' + i % 26));
  const std::string v = IgnoredFieldsHeaderValue(names);
  EXPECT_LE(v.size(), kMaxIgnoredFieldsHeaderBytes);
  EXPECT_EQ(v.substr(v.size() - 4), ",...");
  // One name too long for the header on its own.
  const std::string huge =
      IgnoredFieldsHeaderValue(std::vector<std::string>{std::string(400, '\n')});
  EXPECT_EQ(huge, "...");
}

TEST(IgnoredFieldsTest, CounterBoundsItsSeries) {
  metrics::Registry reg;
  IgnoredFieldCounter c(reg);
  EXPECT_EQ(reg.Render().find("ignored_request_fields"), std::string::npos);  // lazily created
  c.Count(std::vector<std::string>{"top_a", "top_a", "mirostat"});
  std::string text = reg.Render();
  EXPECT_NE(text.find("brisk:ignored_request_fields_total{field=\"top_a\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("brisk:ignored_request_fields_total{field=\"mirostat\"} 1"),
            std::string::npos);
  // Names that are not plain never become label values.
  c.Count(std::vector<std::string>{"bad\"name", "a b", ""});
  text = reg.Render();
  EXPECT_NE(text.find("brisk:ignored_request_fields_total{field=\"other\"} 3"), std::string::npos)
      << text;
  // Past kMaxIgnoredFieldSeries distinct names, new ones go to "other".
  std::vector<std::string> many;
  for (size_t i = 0; i < 200; ++i) many.push_back(fmt::format("f{}", i));
  c.Count(many);
  EXPECT_EQ(c.named_series(), kMaxIgnoredFieldSeries);
  c.Count(std::vector<std::string>{"top_a"});  // an existing series keeps counting
  text = reg.Render();
  EXPECT_NE(text.find("{field=\"top_a\"} 3"), std::string::npos);
  const std::string other =
      fmt::format("{{field=\"other\"}} {}", 3 + 200 - (kMaxIgnoredFieldSeries - 2));
  EXPECT_NE(text.find(other), std::string::npos) << text;
}

}  // namespace
}  // namespace brisk
