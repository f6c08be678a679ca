// Successive halving's rules (train/sweep_halving.h): the rungs' steps, how many variants each
// rung keeps, and which ones, on synthetic scores.
#include "train/sweep_halving.h"

#include <gtest/gtest.h>

namespace ic {
namespace {

TEST(SweepHalving, RungsHalveTheVariantsDownToOneByDefault) {
  // 8 variants, eta 2: 8 -> 4 -> 2 -> 1, at 1/8, 1/4, 1/2 and all of the budget.
  EXPECT_EQ(halving_rungs(8, 2, 1600, 0), (std::vector<int64_t>{200, 400, 800, 1600}));
  // 9 variants, eta 3: 9 -> 3 -> 1.
  EXPECT_EQ(halving_rungs(9, 3, 900, 0), (std::vector<int64_t>{100, 300, 900}));
  // 5 variants, eta 2: 5 -> 3 -> 2 -> 1.
  EXPECT_EQ(halving_rungs(5, 2, 80, 0), (std::vector<int64_t>{10, 20, 40, 80}));
  EXPECT_EQ(halving_rungs(1, 2, 80, 0), (std::vector<int64_t>{80}));
  // A budget too small for every rung: the repeated step 1 rungs collapse into one.
  EXPECT_EQ(halving_rungs(16, 2, 4, 0), (std::vector<int64_t>{1, 2, 4}));
}

TEST(SweepHalving, AGivenFirstRungGrowsByEtaUpToTheBudget) {
  EXPECT_EQ(halving_rungs(8, 2, 1000, 100), (std::vector<int64_t>{100, 200, 400, 800, 1000}));
  EXPECT_EQ(halving_rungs(8, 4, 1000, 300), (std::vector<int64_t>{300, 1000}));
}

TEST(SweepHalving, KeepsTheCeilingOfOneEtaAtLeastOne) {
  EXPECT_EQ(halving_keep(8, 2), 4u);
  EXPECT_EQ(halving_keep(5, 2), 3u);
  EXPECT_EQ(halving_keep(9, 3), 3u);
  EXPECT_EQ(halving_keep(2, 3), 1u);
  EXPECT_EQ(halving_keep(1, 2), 1u);
}

TEST(SweepHalving, KeepsTheBestScoresInRankOrder) {
  // A synthetic metric: the variant's own accuracy.
  const std::vector<std::optional<double>> accuracy = {0.61, 0.92, 0.40, 0.88,
                                                       0.92, 0.10, 0.75, 0.33};
  EXPECT_EQ(halving_survivors(accuracy, ExportBestMode::max, 4),
            (std::vector<size_t>{1, 4, 3, 6}));  // the tie at 0.92: the earlier first
  EXPECT_EQ(halving_survivors(accuracy, ExportBestMode::min, 2), (std::vector<size_t>{5, 7}));
}

TEST(SweepHalving, AVariantWithoutAScoreIsWorst) {
  // A loss that never was a number leaves no best export, so no score.
  const std::vector<std::optional<double>> loss = {std::nullopt, 2.5, 3.0, std::nullopt};
  EXPECT_EQ(halving_survivors(loss, ExportBestMode::min, 3), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(halving_survivors(loss, ExportBestMode::max, 2), (std::vector<size_t>{2, 1}));
}

}  // namespace
}  // namespace ic
