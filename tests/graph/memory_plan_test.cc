#include "graph/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "graph/autodiff.h"
#include "graph/passes.h"
#include "graph/step_buffers.h"
#include "test_graphs.h"

namespace ic {
namespace {

// Every pair of buffers live at a common step must occupy disjoint bytes.
void expect_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan,
                  size_t alignment) {
  ASSERT_EQ(plan.offset.size(), requests.size());
  size_t naive = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const size_t size = (requests[i].bytes + alignment - 1) / alignment * alignment;
    naive += size;
    EXPECT_EQ(plan.offset[i] % alignment, 0u);
    if (requests[i].bytes > 0) {
      EXPECT_LE(plan.offset[i] + requests[i].bytes, plan.arena_bytes);
    }
    for (size_t j = 0; j < i; ++j) {
      if (requests[i].bytes == 0 || requests[j].bytes == 0) continue;
      if (!lifetimes_intersect(requests[i], requests[j])) continue;
      const bool disjoint = plan.offset[i] + requests[i].bytes <= plan.offset[j] ||
                            plan.offset[j] + requests[j].bytes <= plan.offset[i];
      EXPECT_TRUE(disjoint) << requests[i].name << " and " << requests[j].name << " overlap";
    }
  }
  EXPECT_EQ(plan.naive_bytes, naive);
  EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
}

TEST(MemoryPlan, LifetimesIntersect) {
  BufferRequest a{"a", 8, {{0, 2}, {7, 7}}}, b{"b", 8, {{3, 6}}}, c{"c", 8, {{6, 9}}};
  EXPECT_FALSE(lifetimes_intersect(a, b));
  EXPECT_TRUE(lifetimes_intersect(a, c));
  EXPECT_TRUE(lifetimes_intersect(b, c));
}

TEST(MemoryPlan, DisjointLifetimesShareBytesAndOverlappingOnesDoNot) {
  const std::vector<BufferRequest> requests{
      {"a", 100, {{0, 1}}}, {"b", 100, {{2, 3}}}, {"c", 50, {{1, 2}}}};
  const MemoryPlan plan = plan_memory(requests, 64);
  expect_valid(requests, plan, 64);
  EXPECT_EQ(plan.offset[0], plan.offset[1]);  // a and b reuse the same bytes
  EXPECT_EQ(plan.arena_bytes, 128u + 64u);
  EXPECT_EQ(plan.naive_bytes, 128u * 2 + 64u);
}

TEST(MemoryPlan, BestFitPicksTheSmallestGap) {
  // x [0,64) and y [192,256) and z at [320,...) leave gaps of 128 and 64 bytes; a 64-byte
  // buffer live with all of them goes into the 64-byte gap.
  const std::vector<BufferRequest> requests{
      {"big", 1000, {{0, 0}}},  // placed first at 0, dead when the others live
      {"x", 64, {{1, 5}}},     {"gap1", 128, {{1, 1}}}, {"y", 64, {{1, 5}}},
      {"gap2", 64, {{1, 1}}},  {"z", 64, {{1, 5}}},     {"late", 64, {{3, 3}}}};
  const MemoryPlan plan = plan_memory(requests, 64);
  expect_valid(requests, plan, 64);
  // late must land where gap2 was (the 64-byte hole), not where gap1 was.
  EXPECT_EQ(plan.offset[6], plan.offset[4]);
}

TEST(MemoryPlan, RandomIntervalSetsNeverOverlap) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::uniform_int_distribution<int> count_dist(1, 60), step_dist(0, 40), len_dist(0, 10),
        bytes_dist(0, 5000), parts_dist(1, 3);
    std::vector<BufferRequest> requests(static_cast<size_t>(count_dist(rng)));
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].name = std::to_string(i);
      requests[i].bytes = static_cast<size_t>(bytes_dist(rng));
      const int parts = parts_dist(rng);
      for (int p = 0; p < parts; ++p) {
        const int first = step_dist(rng);
        requests[i].live.push_back(LiveInterval{first, first + len_dist(rng)});
      }
    }
    const size_t alignment = trial % 2 == 0 ? 64 : 16;
    const MemoryPlan plan = plan_memory(requests, alignment);
    expect_valid(requests, plan, alignment);
    // A lower bound: at any step the live bytes must fit.
    EXPECT_GE(plan.arena_bytes, plan.peak_live_bytes);
    size_t peak = 0;
    for (int step = 0; step <= 50; ++step) {
      size_t live = 0;
      for (const BufferRequest& r : requests)
        for (const LiveInterval& i : r.live)
          if (i.first <= step && step <= i.last) {
            live += (r.bytes + alignment - 1) / alignment * alignment;
            break;
          }
      EXPECT_GE(plan.arena_bytes, live);
      peak = std::max(peak, live);
    }
    EXPECT_EQ(plan.peak_live_bytes, peak);
  }
}

TEST(MemoryPlan, RealTrainingGraphBuffersAreValidAndReuseMemory) {
  for (bool conservative : {true, false}) {
    const Graph graph = optimize_graph(testing::small_graph({.batch = 4, .size = 9}));
    const AutodiffPlan ad = plan_autodiff(graph);
    std::vector<KernelSizes> sizes(graph.nodes.size(), KernelSizes{256, 96, true, true});
    if (!conservative)
      for (size_t i = 0; i < graph.nodes.size(); ++i)
        sizes[i].backward_reads_outputs = std::holds_alternative<ReluDesc>(graph.nodes[i].desc);
    auto buffers = plan_step_buffers(graph, &ad, ad.storage_root, sizes);
    ASSERT_TRUE(buffers.ok()) << buffers.status().message();
    const MemoryPlan plan = plan_memory(buffers->requests, 64);
    expect_valid(buffers->requests, plan, 64);
    EXPECT_LT(plan.arena_bytes, plan.naive_bytes);
    // Reshape outputs have no buffer of their own.
    for (const Node& node : graph.nodes) {
      if (!is_alias_node(node)) continue;
      EXPECT_EQ(buffers->activation[static_cast<size_t>(node.outputs[0])],
                buffers->activation[static_cast<size_t>(node.inputs[0])]);
    }
    std::printf("small training graph (%s backward reads): arena %zu bytes, naive %zu bytes\n",
                conservative ? "conservative" : "precise", plan.arena_bytes, plan.naive_bytes);
  }
}

TEST(MemoryPlan, ImagesLabelsLogitsAndLossesLiveTheWholeStep) {
  const Graph graph = optimize_graph(testing::small_graph({}));
  const AutodiffPlan ad = plan_autodiff(graph);
  std::vector<KernelSizes> sizes(graph.nodes.size());
  auto buffers = plan_step_buffers(graph, &ad, ad.storage_root, sizes);
  ASSERT_TRUE(buffers.ok());
  const int32_t last = buffers->last_step;
  EXPECT_EQ(last, 2 * static_cast<int32_t>(graph.nodes.size()) - 1);
  std::vector<ValueId> kept{graph.images, graph.labels, graph.logits};
  kept.insert(kept.end(), graph.losses.begin(), graph.losses.end());
  for (ValueId v : kept) {
    const BufferRequest& r =
        buffers->requests[static_cast<size_t>(buffers->activation[static_cast<size_t>(v)])];
    ASSERT_EQ(r.live.size(), 1u);
    EXPECT_EQ(r.live[0].last, last) << r.name;
  }
}

}  // namespace
}  // namespace ic
