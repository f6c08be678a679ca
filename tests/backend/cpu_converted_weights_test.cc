// The CPU backend's shared converted weights (cpu_common.h's converted_weights): kernels of the
// graphs of several batch sizes reading one constant parameter share its converted copy when
// they convert it the same way, oneDNN's format or our own loops' packing, and only then.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

TEST(CpuConvertedWeights, SharedBySourceAndLayoutOnly) {
  DnnlContext ctx;
  const float weights[16] = {}, other[16] = {};
  const dnnl::memory::desc plain({4, 4}, dnnl::memory::data_type::f32,
                                 dnnl::memory::format_tag::ab);
  const dnnl::memory::desc transposed({4, 4}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::ba);
  auto a = converted_weights(ctx, weights, plain, "", 64, true);
  EXPECT_EQ(converted_weights(ctx, weights, plain, "", 64, true), a);
  EXPECT_NE(converted_weights(ctx, weights, transposed, "", 64, true), a);
  EXPECT_NE(converted_weights(ctx, other, plain, "", 64, true), a);

  auto packed = converted_weights(ctx, weights, {}, "ic:depthwise taps x channels", 64, true);
  EXPECT_NE(packed, a);
  EXPECT_EQ(converted_weights(ctx, weights, {}, "ic:depthwise taps x channels", 64, true), packed);
  EXPECT_NE(converted_weights(ctx, weights, {}, "ic:depthwise channels", 64, true), packed);

  // A private copy (a timing run's) is neither found nor finds the shared one.
  auto own = converted_weights(ctx, weights, plain, "", 64, false);
  EXPECT_NE(own, a);
  EXPECT_EQ(converted_weights(ctx, weights, plain, "", 64, true), a);
  ASSERT_NE(own->data, nullptr);
  EXPECT_FALSE(own->ready);

  // Once no kernel holds it, the next asks get a new copy to convert.
  a.reset();
  auto fresh = converted_weights(ctx, weights, plain, "", 64, true);
  EXPECT_FALSE(fresh->ready);
}

}  // namespace
}  // namespace ic::cpu
