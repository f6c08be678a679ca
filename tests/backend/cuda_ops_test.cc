// Every op on the CUDA backend against the CPU backend on the same inputs, forward and
// backward: float32 tightly (TF32 off), bfloat16 convolutions loosely. Skipped visibly
// ("skipped: no GPU") where there is no GPU.
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_util.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::conv_run;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::Vec;

class CudaVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    IC_CUDA_BACKEND_OR_SKIP(gpu_);
    cpu_ = testing::cpu_backend();
  }

  // Runs `run` through `desc` on both backends; compares every output and gradient and the
  // state after the step.
  void compare(const OpDesc& desc, const OpRun& run, double atol, double rtol) {
    OpRun cpu_run = run, gpu_run = run;
    {
      OpHarness h(*cpu_, desc);
      h.run(cpu_run);
    }
    {
      OpHarness h(*gpu_, desc);
      h.run(gpu_run);
    }
    const Status status = gpu_->status();
    ASSERT_TRUE(status.ok()) << status.message();
    const std::string op = op_name(desc);
    for (size_t i = 0; i < cpu_run.outputs.size(); ++i)
      expect_near(gpu_run.outputs[i], cpu_run.outputs[i], atol, rtol, (op + " output").c_str());
    for (size_t i = 0; i < cpu_run.input_grads.size(); ++i)
      expect_near(gpu_run.input_grads[i], cpu_run.input_grads[i], atol, rtol,
                  (op + " input grad " + std::to_string(i)).c_str());
    for (size_t i = 0; i < cpu_run.param_grads.size(); ++i)
      expect_near(gpu_run.param_grads[i], cpu_run.param_grads[i], atol, rtol,
                  (op + " param grad " + std::to_string(i)).c_str());
    for (size_t i = 0; i < cpu_run.state_after.size(); ++i)
      expect_near(gpu_run.state_after[i], cpu_run.state_after[i], atol, rtol,
                  (op + " state " + std::to_string(i)).c_str());
  }

  std::unique_ptr<Backend> gpu_, cpu_;
};

Conv2dDesc conv(Shape in, int64_t co, int kh, int kw, int stride, Padding p, bool bias = false,
                DType compute = DType::f32) {
  Conv2dDesc d = testing::conv_geometry(in, co, kh, kw, stride, p);
  d.has_bias = bias;
  d.compute = compute;
  return d;
}

TEST_F(CudaVsCpu, Conv2dSymmetricSame) {
  compare(conv({2, 7, 6, 5}, 8, 3, 3, 1, Padding::same),
          conv_run(conv({2, 7, 6, 5}, 8, 3, 3, 1, Padding::same), 1), 1e-4, 1e-4);
}

TEST_F(CudaVsCpu, Conv2dAsymmetricSameStride2WithBias) {
  // 8 wide, 3x3 stride 2: TF pads 0 before and 1 after, which cuDNN cannot express.
  const Conv2dDesc d = conv({2, 8, 8, 3}, 4, 3, 3, 2, Padding::same, true);
  compare(d, conv_run(d, 10), 1e-4, 1e-4);
}

TEST_F(CudaVsCpu, Conv2dValidStride2AndFactorised) {
  const Conv2dDesc a = conv({2, 9, 9, 4}, 6, 3, 3, 2, Padding::valid);
  compare(a, conv_run(a, 20), 1e-4, 1e-4);
  const Conv2dDesc b = conv({2, 9, 9, 4}, 6, 1, 7, 1, Padding::same);  // Inception's 1x7
  compare(b, conv_run(b, 30), 1e-4, 1e-4);
}

TEST_F(CudaVsCpu, Conv2dWithoutInputGradient) {
  Conv2dDesc d = conv({2, 6, 6, 3}, 4, 3, 3, 2, Padding::valid);
  d.needs_input_grad = false;
  OpRun run = conv_run(d, 40);
  run.skip_input_grad = {true};
  compare(d, run, 1e-4, 1e-4);
}

TEST_F(CudaVsCpu, Conv2dBfloat16) {
  for (int stride : {1, 2}) {
    const Conv2dDesc d = conv({2, 8, 8, 16}, 16, 3, 3, stride, Padding::same, true, DType::bf16);
    compare(d, conv_run(d, 50 + stride), 0.08, 0.03);
  }
}

// What inference graphs compile: forward only, folded bias, the ReLU fused, constant weights,
// the algorithm timed; symmetric and TF-asymmetric padding, f32 and bf16.
TEST_F(CudaVsCpu, Conv2dForwardOnlyWithBiasAndRelu) {
  for (const Conv2dDesc& base :
       {conv({2, 7, 6, 5}, 8, 3, 3, 1, Padding::same, true),
        conv({2, 8, 8, 3}, 4, 3, 3, 2, Padding::same, true),
        conv({2, 8, 8, 16}, 16, 3, 3, 1, Padding::same, true, DType::bf16)}) {
    Conv2dDesc d = base;
    d.training = false;
    d.fused_relu = true;
    d.constant_weights = true;
    d.time_algorithms = true;
    OpRun run = conv_run(d, 60);
    run.output_grads.clear();  // forward only
    const bool bf16 = d.compute == DType::bf16;
    compare(d, run, bf16 ? 0.08 : 1e-4, bf16 ? 0.03 : 1e-4);
  }
}

// The model zoo's post-ops (MobileNet's ReLU6, EfficientNet's swish and sigmoid) on a plain and
// a depthwise convolution, forward only, against the CPU's oneDNN post-op.
TEST_F(CudaVsCpu, Conv2dForwardOnlyWithFusedActivation) {
  for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish})
    for (int64_t groups : {int64_t{1}, int64_t{16}}) {
      Conv2dDesc d = conv({2, 8, 8, 16}, 16, 3, 3, 1, Padding::same, true);
      d.groups = groups;
      d.training = false;
      d.fused_activation = f;
      d.constant_weights = true;
      OpRun run = conv_run(d, 70);
      for (double& v : run.inputs[0]) v *= 4.0;  // part of ReLU6's output above 6
      run.output_grads.clear();
      compare(d, run, 1e-4, 1e-4);
    }
}

BatchNormDesc bn(Shape in, bool gamma, bool relu, bool training) {
  BatchNormDesc d;
  d.input = in;
  d.has_gamma = gamma;
  d.fused_relu = relu;
  d.training = training;
  return d;
}

OpRun bn_run(const BatchNormDesc& d, uint32_t seed) {
  const int64_t c = d.input.c();
  OpRun run;
  run.inputs = {random_vec(d.input.numel(), seed, -2.0, 3.0)};
  run.params = {random_vec(c, seed + 1)};
  if (d.has_gamma) run.params.push_back(random_vec(c, seed + 2, 0.5, 1.5));
  run.state = {random_vec(c, seed + 3), random_vec(c, seed + 4, 0.5, 2.0)};
  run.output_sizes = {size_t(d.input.numel())};
  if (d.training) run.output_grads = {random_vec(d.input.numel(), seed + 5)};
  return run;
}

TEST_F(CudaVsCpu, BatchNormTrainingAllVariants) {
  uint32_t seed = 100;
  for (bool gamma : {false, true})
    for (bool relu : {false, true}) {
      const BatchNormDesc d = bn({3, 5, 4, 6}, gamma, relu, true);
      compare(d, bn_run(d, seed += 10), 2e-4, 2e-4);
    }
}

TEST_F(CudaVsCpu, BatchNormInference) {
  const BatchNormDesc d = bn({2, 3, 3, 5}, true, true, false);
  compare(d, bn_run(d, 200), 1e-5, 1e-5);
}

TEST_F(CudaVsCpu, ReluAndAdd) {
  const Shape s{2, 7, 5, 3};
  OpRun relu;
  relu.inputs = {random_vec(s.numel(), 300)};
  relu.output_sizes = {size_t(s.numel())};
  relu.output_grads = {random_vec(s.numel(), 301)};
  compare(ReluDesc{s}, relu, 0, 0);
  for (bool fused : {false, true}) {
    OpRun add;
    add.inputs = {random_vec(s.numel(), 302), random_vec(s.numel(), 303)};
    add.output_sizes = {size_t(s.numel())};
    add.output_grads = {random_vec(s.numel(), 304)};
    compare(AddDesc{s, fused}, add, 0, 0);
  }
}

TEST_F(CudaVsCpu, Pooling) {
  const Shape s{2, 8, 7, 3};
  uint32_t seed = 400;
  for (PoolKind kind : {PoolKind::max, PoolKind::avg})
    for (Padding p : {Padding::same, Padding::valid})
      for (int stride : {1, 2}) {
        const Pool2dDesc d{s, kind, 3, 3, stride, stride, p};
        OpRun run;
        run.inputs = {random_vec(s.numel(), seed++)};
        run.output_sizes = {size_t(d.output().numel())};
        run.output_grads = {random_vec(d.output().numel(), seed++)};
        compare(d, run, 1e-6, 1e-6);
      }
}

TEST_F(CudaVsCpu, GlobalAvgPoolConcatReshape) {
  const Shape s{2, 5, 3, 4};
  OpRun gap;
  gap.inputs = {random_vec(s.numel(), 500)};
  gap.output_sizes = {size_t(s.n() * s.c())};
  gap.output_grads = {random_vec(s.n() * s.c(), 501)};
  compare(GlobalAvgPoolDesc{s}, gap, 1e-6, 1e-6);

  const std::vector<Shape> shapes{{2, 3, 5, 3}, {2, 3, 5, 1}, {2, 3, 5, 17}};
  const ConcatDesc cat{shapes};
  OpRun c;
  for (size_t i = 0; i < shapes.size(); ++i)
    c.inputs.push_back(random_vec(shapes[i].numel(), 510 + static_cast<uint32_t>(i)));
  c.output_sizes = {size_t(cat.output().numel())};
  c.output_grads = {random_vec(cat.output().numel(), 520)};
  compare(cat, c, 0, 0);

  OpRun r;
  r.inputs = {random_vec(s.numel(), 530)};
  r.output_sizes = {size_t(s.numel())};
  r.output_grads = {random_vec(s.numel(), 531)};
  compare(ReshapeDesc{s, Shape{s.n(), s.h() * s.w() * s.c()}}, r, 0, 0);
}

TEST_F(CudaVsCpu, DropoutDrawsTheCpuMaskExactly) {
  const Shape s{4, 3, 3, 50};
  for (uint64_t seed : {uint64_t{1}, uint64_t{0xDEADBEEF12345}}) {
    OpRun run;
    run.inputs = {random_vec(s.numel(), 600)};
    run.output_sizes = {size_t(s.numel())};
    run.output_grads = {random_vec(s.numel(), 601)};
    run.ctx.seed = seed;
    compare(DropoutDesc{s, 0.8f, true}, run, 0, 0);
  }
  OpRun eval;
  eval.inputs = {random_vec(s.numel(), 602)};
  eval.output_sizes = {size_t(s.numel())};
  compare(DropoutDesc{s, 0.8f, false}, eval, 0, 0);
}

TEST_F(CudaVsCpu, GroupedAndDepthwiseConv) {
  Conv2dDesc depthwise = conv({2, 8, 8, 16}, 16, 3, 3, 2, Padding::same, true);
  depthwise.groups = 16;
  compare(depthwise, conv_run(depthwise, 700), 1e-4, 1e-4);
  Conv2dDesc grouped = conv({2, 7, 6, 6}, 9, 5, 5, 1, Padding::same);
  grouped.groups = 3;
  compare(grouped, conv_run(grouped, 710), 1e-4, 1e-4);
}

TEST_F(CudaVsCpu, ActivationsScaleChannelsZeroPadAndDropConnect) {
  const Shape s{2, 5, 4, 6};
  OpRun run;
  run.inputs = {random_vec(s.numel(), 720, -8, 8)};
  run.output_sizes = {size_t(s.numel())};
  run.output_grads = {random_vec(s.numel(), 721)};
  for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish})
    compare(ActivationDesc{s, f}, run, 1e-6, 1e-5);

  OpRun scale = run;
  scale.inputs.push_back(random_vec(s.n() * s.c(), 722));
  compare(ChannelScaleDesc{s}, scale, 1e-5, 1e-5);

  const PadDesc pad{s, Pads{3, 3, 1, 2}};
  OpRun padded;
  padded.inputs = run.inputs;
  padded.output_sizes = {size_t(pad.output().numel())};
  padded.output_grads = {random_vec(pad.output().numel(), 723)};
  compare(pad, padded, 0, 0);

  DropoutDesc drop{s, 0.7f, true};
  drop.per_example = true;
  run.ctx.seed = 99;
  compare(drop, run, 0, 0);
}

TEST_F(CudaVsCpu, DenseWithBias) {
  const DenseDesc d{5, 33, 17, true, true};
  OpRun run;
  run.inputs = {random_vec(d.batch * d.in_features, 700)};
  run.params = {random_vec(d.in_features * d.out_features, 701), random_vec(d.out_features, 702)};
  run.output_sizes = {size_t(d.batch * d.out_features)};
  run.output_grads = {random_vec(d.batch * d.out_features, 703)};
  compare(d, run, 1e-5, 1e-5);
}

TEST_F(CudaVsCpu, SoftmaxCrossEntropyWithSmoothingAndPaddingRows) {
  const SoftmaxCrossEntropyDesc d{4, 11, 0.1f, 0.4f};
  OpRun run;
  run.inputs = {random_vec(d.batch * d.num_classes, 800, -4.0, 4.0)};
  run.labels = {3, -1, 10, 0};  // row 1 is padding
  run.output_sizes = {1};
  run.output_grads = {Vec{1.0}};
  compare(d, run, 1e-6, 1e-5);
}

}  // namespace
}  // namespace ic
