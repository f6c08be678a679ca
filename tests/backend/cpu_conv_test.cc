// Conv2d on the CPU backend against the double-precision reference, forward and backward,
// for odd shapes, asymmetric TF SAME padding, strides and 1x7 / 7x1 kernels, in f32 and bf16.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_common.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::conv_run;
using testing::cpu_backend;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::Vec;

struct ConvCase {
  Shape input;
  int64_t filters;
  int kh, kw, stride;
  Padding padding;
  bool bias;
};

Conv2dDesc conv_desc(const ConvCase& c, DType compute = DType::f32) {
  Conv2dDesc d = testing::conv_geometry(c.input, c.filters, c.kh, c.kw, c.stride, c.padding);
  d.has_bias = c.bias;
  d.compute = compute;
  return d;
}

const ConvCase kCases[] = {
    {{2, 7, 5, 3}, 4, 3, 3, 1, Padding::same, true},
    {{2, 7, 5, 3}, 5, 3, 3, 2, Padding::same, false},
    {{2, 7, 5, 3}, 5, 3, 3, 2, Padding::valid, true},
    {{2, 8, 6, 5}, 3, 3, 3, 2, Padding::same, false},  // even size: pad 0 before, 1 after
    {{2, 7, 5, 3}, 4, 1, 7, 1, Padding::same, false},
    {{2, 7, 5, 3}, 4, 7, 1, 1, Padding::same, false},
    {{1, 9, 7, 6}, 7, 5, 5, 1, Padding::same, true},
    {{2, 6, 6, 17}, 19, 1, 1, 1, Padding::same, false},
    {{1, 11, 9, 16}, 32, 3, 3, 2, Padding::valid, false},
    // 3x3 stride 1 on a map this large runs Winograd in blocked layouts inside the kernel.
    {{1, 36, 36, 32}, 33, 3, 3, 1, Padding::same, true},
    {{1, 37, 38, 32}, 32, 3, 3, 1, Padding::valid, false},
};

TEST(CpuConv, MatchesReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  uint32_t seed = 100;
  for (const ConvCase& c : kCases) {
    const Conv2dDesc d = conv_desc(c);
    SCOPED_TRACE(d.input.str() + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw) + " s" +
                 std::to_string(c.stride) + (c.padding == Padding::same ? " SAME" : " VALID"));
    OpHarness h(*backend, d);
    OpRun run = conv_run(d, seed += 10);
    h.run(run);
    testing::expect_conv_matches_reference(d, run, 1e-4, 1e-4, 1e-4);
  }
}

// Training's fixed rule runs kernels wider than 1x1 on 8 or more input channels on oneDNN's
// blocked layout where the CPU has no AVX-512, converting x, y and the gradients inside the
// kernel; channel counts that are not multiples of the block (8) are padded there.
TEST(CpuConv, BlockedLayoutWithoutAvx512MatchesReference) {
  const ConvCase cases[] = {
      {{2, 9, 7, 12}, 13, 3, 3, 1, Padding::same, true},
      {{2, 10, 9, 12}, 13, 3, 3, 2, Padding::same, false},  // even rows: pad 0 before
      {{1, 9, 8, 16}, 24, 1, 7, 1, Padding::same, false},
      {{1, 9, 8, 9}, 8, 5, 5, 1, Padding::valid, true},
      {{2, 6, 6, 17}, 19, 1, 1, 1, Padding::same, false},  // 1x1: NHWC everywhere
      {{2, 9, 9, 3}, 8, 3, 3, 2, Padding::valid, false},   // 3 input channels: NHWC everywhere
  };
  auto backend = cpu_backend();
  uint32_t seed = 300;
  for (const ConvCase& c : cases) {
    const Conv2dDesc d = conv_desc(c);
    OpHarness h(*backend, d);
    const std::string impl = h.kernel().implementation();
    SCOPED_TRACE(d.input.str() + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw) + ": " +
                 impl);
    const bool blocked = !cpu::onednn_runs_avx512() && c.kh * c.kw > 1 && c.input.c() >= 8;
    EXPECT_EQ(impl.find(" blocked") != std::string::npos, blocked);
    OpRun run = conv_run(d, seed += 10);
    h.run(run);
    testing::expect_conv_matches_reference(d, run, 1e-4, 1e-4, 1e-4);
  }
}

TEST(CpuConv, FiniteDifferenceGradients) {
  auto backend = cpu_backend();
  const Conv2dDesc d = conv_desc({{2, 7, 5, 3}, 4, 3, 3, 2, Padding::same, true});
  OpHarness h(*backend, d);
  OpRun run = conv_run(d, 7);
  h.run(run);
  testing::expect_backend_gradient(h, run, false, 0, 1e-2, 2e-3, 1e-2);
  testing::expect_backend_gradient(h, run, true, 0, 1e-2, 2e-3, 1e-2);
  testing::expect_backend_gradient(h, run, true, 1, 1e-2, 2e-3, 1e-2, 4);
}

TEST(CpuConv, SkipsInputGradientForImageConv) {
  auto backend = cpu_backend();
  Conv2dDesc d = conv_desc({{2, 9, 9, 3}, 8, 3, 3, 2, Padding::valid, false});
  d.needs_input_grad = false;
  OpHarness h(*backend, d);
  OpRun run = conv_run(d, 3);
  run.skip_input_grad = {true};
  h.run(run);
  const auto g = ref::conv2d_backward(d, run.inputs[0], run.params[0], run.output_grads[0]);
  EXPECT_TRUE(run.input_grads[0].empty());
  expect_near(run.param_grads[0], g.dw, 1e-4, 1e-4, "conv dw");
}

// bf16 rounds x, w and dy to 8 mantissa bits: compare with a relative-to-scale tolerance.
TEST(CpuConv, Bf16IsCloseToReference) {
  auto backend = cpu_backend();
  for (const ConvCase& c : {kCases[0], kCases[4], kCases[8]}) {
    const Conv2dDesc d = conv_desc(c, DType::bf16);
    OpHarness h(*backend, d);
    OpRun run = conv_run(d, 77);
    h.run(run);
    const Vec b = c.bias ? run.params[1] : Vec();
    const double scale = std::sqrt(double(c.kh * c.kw * c.input.c()));
    expect_near(run.outputs[0], ref::conv2d_forward(d, run.inputs[0], run.params[0], b),
                0.02 * scale, 0.01, "bf16 conv y");
    const auto g = ref::conv2d_backward(d, run.inputs[0], run.params[0], run.output_grads[0]);
    expect_near(run.input_grads[0], g.dx, 0.02 * scale, 0.01, "bf16 conv dx");
    expect_near(run.param_grads[0], g.dw, 0.02 * std::sqrt(double(run.outputs[0].size())), 0.01,
                "bf16 conv dw");
  }
}

TEST(CpuConv, TfPaddingKnownValues) {
  EXPECT_EQ(tf_output_size(299, 3, 2, Padding::valid), 149);
  EXPECT_EQ(tf_output_size(7, 3, 2, Padding::same), 4);
  const Pads odd = tf_pads(7, 8, 3, 3, 2, 2, Padding::same);  // totals 2 and 1
  EXPECT_EQ(odd.top, 1);
  EXPECT_EQ(odd.bottom, 1);
  EXPECT_EQ(odd.left, 0);
  EXPECT_EQ(odd.right, 1);
}

}  // namespace
}  // namespace ic
