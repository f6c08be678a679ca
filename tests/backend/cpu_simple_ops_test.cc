// ReLU, Add, Concat, GlobalAvgPool, Dropout, Reshape, Dense and SoftmaxCrossEntropy on the
// CPU backend against the double-precision references.
#include <gtest/gtest.h>

#include "op_harness.h"

namespace ic {
namespace {

using testing::cpu_backend;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::Vec;

TEST(CpuOps, ReluForwardBackward) {
  auto backend = cpu_backend();
  OpHarness h(*backend, ReluDesc{testing::kOddShape});
  OpRun run;
  run.inputs = {random_vec(testing::kOddShape.numel(), 1)};
  run.output_sizes = {size_t(testing::kOddShape.numel())};
  run.output_grads = {random_vec(testing::kOddShape.numel(), 2)};
  h.run(run);
  for (size_t i = 0; i < run.inputs[0].size(); ++i) {
    ASSERT_EQ(run.outputs[0][i], std::max(run.inputs[0][i], 0.0));
    ASSERT_EQ(run.input_grads[0][i], run.inputs[0][i] > 0 ? run.output_grads[0][i] : 0.0);
  }
}

TEST(CpuOps, AddWithAndWithoutRelu) {
  auto backend = cpu_backend();
  for (bool relu : {false, true}) {
    OpHarness h(*backend, AddDesc{testing::kOddShape, relu});
    OpRun run;
    run.inputs = {random_vec(testing::kOddShape.numel(), 3),
                  random_vec(testing::kOddShape.numel(), 4)};
    run.output_sizes = {size_t(testing::kOddShape.numel())};
    run.output_grads = {random_vec(testing::kOddShape.numel(), 5)};
    run.skip_input_grad = {false, relu};  // a null gradient is skipped
    h.run(run);
    for (size_t i = 0; i < run.inputs[0].size(); ++i) {
      const double sum = static_cast<float>(run.inputs[0][i] + run.inputs[1][i]);
      const double y = relu ? std::max(sum, 0.0) : sum;
      ASSERT_EQ(run.outputs[0][i], y);
      const double g = relu && y <= 0 ? 0.0 : run.output_grads[0][i];
      ASSERT_EQ(run.input_grads[0][i], g);
      if (!relu) {
        ASSERT_EQ(run.input_grads[1][i], g);
      }
    }
    EXPECT_TRUE(run.input_grads[1].empty() == relu);
  }
}

TEST(CpuOps, ConcatChannelsForwardBackward) {
  auto backend = cpu_backend();
  const std::vector<Shape> shapes{{2, 3, 5, 3}, {2, 3, 5, 1}, {2, 3, 5, 17}};
  ConcatDesc d{shapes};
  OpHarness h(*backend, d);
  OpRun run;
  for (size_t k = 0; k < shapes.size(); ++k)
    run.inputs.push_back(random_vec(shapes[k].numel(), 10 + k));
  const Shape out = d.output();
  run.output_sizes = {size_t(out.numel())};
  run.output_grads = {random_vec(out.numel(), 20)};
  h.run(run);
  expect_near(run.outputs[0], ref::concat_forward(shapes, run.inputs), 0, 0, "concat y");
  // The backward of a concat is the split: concat of the input grads gives dy back.
  expect_near(ref::concat_forward(shapes, run.input_grads), run.output_grads[0], 0, 0, "concat dx");
}

TEST(CpuOps, GlobalAvgPool) {
  auto backend = cpu_backend();
  OpHarness h(*backend, GlobalAvgPoolDesc{testing::kOddShape});
  OpRun run;
  run.inputs = {random_vec(testing::kOddShape.numel(), 30)};
  run.output_sizes = {size_t(testing::kOddShape.n() * testing::kOddShape.c())};
  run.output_grads = {random_vec(testing::kOddShape.n() * testing::kOddShape.c(), 31)};
  h.run(run);
  expect_near(run.outputs[0], ref::global_avg_pool_forward(testing::kOddShape, run.inputs[0]), 1e-6,
              1e-5, "gap y");
  testing::expect_backend_gradient(h, run, false, 0, 1e-2, 1e-3, 1e-2);
}

TEST(CpuOps, DropoutMaskMatchesReferenceHash) {
  auto backend = cpu_backend();
  const Shape s{4, 9, 9, 13};
  for (bool training : {true, false}) {
    OpHarness h(*backend, DropoutDesc{s, 0.8f, training});
    OpRun run;
    run.ctx.seed = 0x1234567890abcdefull;
    run.inputs = {random_vec(s.numel(), 40)};
    run.output_sizes = {size_t(s.numel())};
    run.output_grads = {random_vec(s.numel(), 41)};
    h.run(run);
    const Vec y =
        training ? ref::dropout_forward(run.inputs[0], 0.8f, run.ctx.seed) : run.inputs[0];
    const Vec dx = training ? ref::dropout_forward(run.output_grads[0], 0.8f, run.ctx.seed)
                            : run.output_grads[0];
    expect_near(run.outputs[0], y, 1e-7, 1e-6, "dropout y");
    expect_near(run.input_grads[0], dx, 1e-7, 1e-6, "dropout dx");
    if (training) {
      size_t kept = 0;
      for (double v : y) kept += v != 0.0;
      EXPECT_NEAR(double(kept) / y.size(), 0.8, 0.02);
    }
  }
  // Another seed draws another mask.
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i)
    same += ref::dropout_keep(1, i, 0.5f) == ref::dropout_keep(2, i, 0.5f);
  EXPECT_LT(same, 600);
}

TEST(CpuOps, ReshapeCopiesOnlyWhenNotAliased) {
  auto backend = cpu_backend();
  OpHarness h(*backend, ReshapeDesc{testing::kOddShape, Shape{2, 105}});
  OpRun run;
  run.inputs = {random_vec(testing::kOddShape.numel(), 50)};
  run.output_sizes = {size_t(testing::kOddShape.numel())};
  run.output_grads = {random_vec(testing::kOddShape.numel(), 51)};
  h.run(run);
  EXPECT_EQ(run.outputs[0], run.inputs[0]);
  EXPECT_EQ(run.input_grads[0], run.output_grads[0]);
  EXPECT_FALSE(backend->compile(ReshapeDesc{testing::kOddShape, Shape{2, 100}}).ok());
}

TEST(CpuOps, DenseMatchesReference) {
  auto backend = cpu_backend();
  for (bool bias : {true, false}) {
    DenseDesc d{3, 37, 11, bias, true};
    OpHarness h(*backend, d);
    OpRun run;
    run.inputs = {random_vec(3 * 37, 60)};
    run.params = {random_vec(37 * 11, 61)};
    if (bias) run.params.push_back(random_vec(11, 62));
    run.output_sizes = {33};
    run.output_grads = {random_vec(33, 63)};
    h.run(run);
    const Vec b = bias ? run.params[1] : Vec();
    expect_near(run.outputs[0], ref::dense_forward(3, 37, 11, run.inputs[0], run.params[0], b),
                1e-5, 1e-5, "dense y");
    const auto g =
        ref::dense_backward(3, 37, 11, run.inputs[0], run.params[0], run.output_grads[0]);
    expect_near(run.input_grads[0], g.dx, 1e-5, 1e-5, "dense dx");
    expect_near(run.param_grads[0], g.dw, 1e-5, 1e-5, "dense dw");
    if (bias) expect_near(run.param_grads[1], g.db, 1e-5, 1e-5, "dense db");
    testing::expect_backend_gradient(h, run, true, 0, 1e-2, 2e-3, 1e-2, 6);
  }
}

TEST(CpuOps, SoftmaxCrossEntropyWithSmoothingAndPadding) {
  auto backend = cpu_backend();
  SoftmaxCrossEntropyDesc d{5, 13, 0.1f, 0.4f};
  OpHarness h(*backend, d);
  OpRun run;
  run.inputs = {random_vec(5 * 13, 70, -8, 8)};
  run.inputs[0][3] = 60.f;  // a large logit: the log-sum-exp must stay finite
  run.labels = {3, -1, 12, 0, 7};
  run.output_sizes = {1};
  run.output_grads = {Vec{1.0}};
  h.run(run);
  EXPECT_NEAR(run.outputs[0][0], ref::softmax_xent_forward(d, run.inputs[0], run.labels), 1e-5);
  expect_near(run.input_grads[0], ref::softmax_xent_backward(d, run.inputs[0], run.labels), 1e-6,
              1e-4, "xent dlogits");
  testing::expect_backend_gradient(h, run, false, 0, 1e-2, 1e-4, 2e-2, 8);

  // All rows padding: loss 0, gradient 0.
  run.labels = {-1, -1, -1, -1, -1};
  h.run(run);
  EXPECT_EQ(run.outputs[0][0], 0.0);
  for (double g : run.input_grads[0]) ASSERT_EQ(g, 0.0);
}

}  // namespace
}  // namespace ic

namespace ic {
namespace {

TEST(CpuOps, BadDescriptionsAndBindingsAreErrors) {
  auto backend = testing::cpu_backend();
  Conv2dDesc conv;
  conv.input = Shape{1, 2, 2, 3};
  conv.out_channels = 4;
  conv.kernel_h = conv.kernel_w = 3;
  conv.padding = Padding::valid;  // a 3x3 window does not fit a 2x2 image
  auto bad = backend->compile(conv);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("conv2d"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(backend->compile(DropoutDesc{Shape{2, 3}, 0.f, true}).ok());
  EXPECT_FALSE(backend->compile(ConcatDesc{{Shape{1, 2, 2, 3}, Shape{1, 3, 2, 3}}}).ok());

  auto relu = backend->compile(ReluDesc{Shape{4}});
  ASSERT_TRUE(relu.ok());
  OpBindings missing_output;
  float x[4] = {};
  missing_output.inputs = {x};
  const Status status = (*relu)->bind(missing_output);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("relu"), std::string::npos) << status.message();
}

TEST(CpuOps, BackwardReadsWhatTheGraphMustKeep) {
  auto backend = testing::cpu_backend();
  auto relu = backend->compile(ReluDesc{Shape{4}});
  auto concat = backend->compile(ConcatDesc{{Shape{1, 2, 2, 3}}});
  Conv2dDesc c;
  c.input = Shape{1, 4, 4, 3};
  c.out_channels = 2;
  auto conv = backend->compile(c);
  ASSERT_TRUE(relu.ok() && concat.ok() && conv.ok());
  EXPECT_FALSE((*relu)->backward_reads().inputs);
  EXPECT_TRUE((*relu)->backward_reads().outputs);
  EXPECT_FALSE((*concat)->backward_reads().inputs || (*concat)->backward_reads().outputs);
  EXPECT_TRUE((*conv)->backward_reads().inputs);
  EXPECT_FALSE((*conv)->backward_reads().outputs);
}

}  // namespace
}  // namespace ic
