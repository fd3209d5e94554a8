#include "grammar/char_class.h"

#include <gtest/gtest.h>

#include <string>

namespace brisk {
namespace {

// A dialect whose members are single ASCII bytes and "%d" (a set: digits).
struct Parsed {
  bool ok = false;
  CharClass c;
  std::string error;
  size_t end = 0;  // the cursor afterwards
};

Parsed Parse(std::string_view s, bool leading_bracket_is_member = false) {
  Parsed p;
  size_t i = 0;
  const CharClassDialect dialect{
      .read_member =
          [&](uint32_t* cp, CodePointRanges* set) {
            if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == 'd') {
              set->emplace_back('0', '9');
              i += 2;
              return true;
            }
            if (s[i] == '!') {
              p.error = "bad member";
              return false;
            }
            *cp = static_cast<uint8_t>(s[i++]);
            return true;
          },
      .fail = [&](std::string_view what) { p.error = what; },
      .leading_bracket_is_member = leading_bracket_is_member,
  };
  p.ok = ParseCharClass(s, &i, dialect, &p.c);
  p.end = i;
  return p;
}

TEST(CharClassTest, MembersRangesAndNegation) {
  Parsed p = Parse("[a-cx%d-]rest");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_FALSE(p.c.negate);
  EXPECT_EQ(p.c.ranges, (CodePointRanges{{'a', 'c'}, {'x', 'x'}, {'0', '9'}, {'-', '-'}}));
  EXPECT_EQ(p.end, 9u);  // past the ']'
  p = Parse("[^-a]");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.c.negate);
  EXPECT_EQ(p.c.ranges, (CodePointRanges{{'-', '-'}, {'a', 'a'}}));
}

TEST(CharClassTest, LeadingBracketIsTheDialectsChoice) {
  Parsed p = Parse("[]a]");
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.c.ranges.empty());  // "[]": the empty class
  EXPECT_EQ(p.end, 2u);
  p = Parse("[^]a]", /*leading_bracket_is_member=*/true);
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.c.negate);
  EXPECT_EQ(p.c.ranges, (CodePointRanges{{']', ']'}, {'a', 'a'}}));
}

TEST(CharClassTest, ErrorsSayWhatIsWrongAndWhere) {
  Parsed p = Parse("[a-");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "unterminated character class");
  EXPECT_EQ(p.end, 3u);
  p = Parse("[z-a]");
  EXPECT_EQ(p.error, "character range out of order");
  EXPECT_EQ(p.end, 4u);
  p = Parse("[a-%d]");
  EXPECT_EQ(p.error, "a class shorthand cannot end a range");
  p = Parse("[a!]");
  EXPECT_EQ(p.error, "bad member");
  EXPECT_EQ(p.end, 2u);
}

}  // namespace
}  // namespace brisk
