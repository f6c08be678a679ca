#include "graph/param_layout.h"

#include <gtest/gtest.h>

#include "test_graphs.h"

namespace ic {
namespace {

TEST(ParamLayout, DecayedKernelsFirstThenOtherTrainablesThenStateSeparately) {
  const Graph g = testing::small_graph({});
  const ParamLayout layout = ParamLayout::plan(g);
  ASSERT_EQ(layout.offset.size(), g.params.size());

  // Independent reference: walk the params three times in order.
  size_t decayed = 0, trainable = 0, state = 0;
  for (const ParamInfo& p : g.params)
    if (p.trainable && p.weight_decay) decayed += static_cast<size_t>(p.shape.numel());
  trainable = decayed;
  size_t next_decayed = 0, next_other = decayed;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const ParamInfo& p = g.params[i];
    const auto n = static_cast<size_t>(p.shape.numel());
    if (!p.trainable) {
      EXPECT_EQ(layout.offset[i], state) << p.name;
      state += n;
    } else if (p.weight_decay) {
      EXPECT_EQ(layout.offset[i], next_decayed) << p.name;
      next_decayed += n;
    } else {
      EXPECT_EQ(layout.offset[i], next_other) << p.name;
      next_other += n;
      trainable += n;
    }
  }
  EXPECT_EQ(layout.decayed_count, decayed);
  EXPECT_EQ(layout.trainable_count, trainable);
  EXPECT_EQ(layout.state_count, state);
  EXPECT_EQ(layout.trainable_count, static_cast<size_t>(g.trainable_parameter_count()));

  // The first conv kernel is at 0; the first BN beta (not decayed) right after all kernels.
  EXPECT_EQ(layout.offset[static_cast<size_t>(g.find_param("Net/Conv2d_1a_3x3/weights"))], 0u);
  EXPECT_EQ(layout.offset[static_cast<size_t>(g.find_param("Net/Conv2d_1a_3x3/BatchNorm/beta"))],
            decayed);
  EXPECT_EQ(
      layout.offset[static_cast<size_t>(g.find_param("Net/Conv2d_1a_3x3/BatchNorm/moving_mean"))],
      0u);
  EXPECT_EQ(
      layout
          .offset[static_cast<size_t>(g.find_param("Net/Conv2d_1a_3x3/BatchNorm/moving_variance"))],
      4u);
}

TEST(ParamLayout, TrainableRangesTileTheArenaExactly) {
  const Graph g = testing::small_graph({.dead_branch = true});
  const ParamLayout layout = ParamLayout::plan(g);
  std::vector<int> cover(layout.trainable_count, 0), state(layout.state_count, 0);
  for (size_t i = 0; i < g.params.size(); ++i) {
    auto& arena = g.params[i].trainable ? cover : state;
    for (int64_t e = 0; e < g.params[i].shape.numel(); ++e)
      ++arena.at(layout.offset[i] + static_cast<size_t>(e));
  }
  for (int c : cover) EXPECT_EQ(c, 1);
  for (int c : state) EXPECT_EQ(c, 1);
}

}  // namespace
}  // namespace ic
