#include "core/byte_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ic {
namespace {

TEST(ByteBudget, ReservesUpToTheLimitAndNoFurther) {
  ByteBudget budget(100);
  EXPECT_TRUE(budget.try_reserve(60));
  EXPECT_FALSE(budget.try_reserve(41));  // 101 > 100: nothing added
  EXPECT_EQ(budget.used(), 60u);
  EXPECT_TRUE(budget.try_reserve(40));
  EXPECT_FALSE(budget.try_reserve(1));
  budget.release(100);
  EXPECT_FALSE(budget.try_reserve(101));
  EXPECT_FALSE(budget.try_reserve(SIZE_MAX));  // no wrap-around
  EXPECT_TRUE(budget.try_reserve(0));
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ByteBudget, AHoldReleasesWhatItGotAndOnlyThat) {
  ByteBudget budget(100);
  {
    const ByteBudget::Hold first(budget, 70);
    EXPECT_TRUE(first.held());
    const ByteBudget::Hold second(budget, 70);
    EXPECT_FALSE(second.held());
    EXPECT_EQ(budget.used(), 70u);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ByteBudget, ThreadsTogetherNeverHoldMoreThanTheLimit) {
  ByteBudget budget(1000);
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        const ByteBudget::Hold hold(budget, 300);
        if (budget.used() > budget.limit()) over = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(over);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace ic
