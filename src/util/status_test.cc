#include "util/status.h"

#include <gtest/gtest.h>

namespace brisk {
namespace {

Expected<int> Half(int x) {
  if (x % 2) return InvalidArgument("{} is odd", x);
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(int h, Half(x));
  *out = h;
  return Status::Ok();
}

TEST(StatusTest, ValueAndError) {
  auto a = Half(4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 2);
  auto b = Half(3);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().ToString(), "INVALID_ARGUMENT: 3 is odd");
}

TEST(StatusTest, Macros) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(5, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.WithContext("ctx").message(), "ctx: 5 is odd");
}

}  // namespace
}  // namespace brisk
