// Graph's cost figures, which the benchmarks divide by their time: multiply-adds (GFLOP/s) and
// bytes accessed (GB/s).
#include <gtest/gtest.h>

#include "graph/graph.h"

namespace ic {
namespace {

TEST(GraphCost, BytesAccessedCountsEachNodesValuesAndParameters) {
  GraphBuilder b(false);
  const ValueId x = b.images(Shape{2, 8, 8, 3});
  GraphBuilder::ConvOptions c;
  c.filters = 4;
  c.kernel_h = c.kernel_w = 3;
  const ValueId y = b.conv2d(x, c, "Conv");
  b.relu(y, "Conv/Relu");
  Graph g = b.finish();
  const int64_t image = 2 * 8 * 8 * 3 * 4, feature = 2 * 8 * 8 * 4 * 4, weights = 3 * 3 * 3 * 4 * 4;
  // conv: images in, features out, weights; relu: features in and out.
  EXPECT_EQ(g.bytes_accessed(), image + feature + weights + 2 * feature);
  EXPECT_EQ(g.multiply_adds(), 2 * 8 * 8 * 4 * 3 * 3 * 3);
  // A value held in bf16 counts two bytes an element.
  g.values[static_cast<size_t>(y)].dtype = DType::bf16;
  EXPECT_EQ(g.bytes_accessed(), image + feature / 2 + weights + feature / 2 + feature);
}

}  // namespace
}  // namespace ic
