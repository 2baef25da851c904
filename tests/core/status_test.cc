#include "libtracer/core/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace tracer {
namespace {

TEST(Status, DefaultIsOkWithNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
  EXPECT_TRUE(s.WithPrefix("f:1").ok());
}

TEST(Status, ErrorCarriesItsMessageAndPrefix) {
  const Status s = Status::Error("nothing after '='");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "nothing after '='");
  EXPECT_EQ(s.WithPrefix("g.groups:3").message(), "g.groups:3: nothing after '='");
}

TEST(StatusOr, HoldsAValueOrAnError) {
  StatusOr<std::string> v = std::string("x");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v.status().ok());
  EXPECT_EQ(*v, "x");
  EXPECT_EQ(v->size(), 1u);
  v.value() += "y";
  EXPECT_EQ(std::move(v).value(), "xy");

  StatusOr<std::string> e = Status::Error("bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "bad");
}

TEST(StatusOr, MoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> owned = std::move(p).value();
  EXPECT_EQ(*owned, 7);
}

TEST(StatusOrDeathTest, ValueOfAnErrorAbortsWithTheMessage) {
  StatusOr<int> e = Status::Error("no such table");
  EXPECT_DEATH((void)e.value(), "value\\(\\) of an error: no such table");
  EXPECT_DEATH([] { StatusOr<int> bad{Status()}; }(), "StatusOr built from an ok Status");
}

}  // namespace
}  // namespace tracer
