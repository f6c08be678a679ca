// conv_kernel.cc's convolution kernel (oneDNN's convolution primitives, or im2col_conv.h's
// product) for a given plan, and the pieces of it that conv_choice.cc needs to pick the plan.
#pragma once

#include <memory>
#include <span>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// The type `d` computes in on this CPU: bf16 where asked and the CPU has bf16 convolutions
// (training ones only where bf16 outpaces f32), else float32.
dt compute_type(const Conv2dDesc& d, const DnnlContext& ctx);

// Our own forward-only float32 kernels on NHWC, one per ConvKernelKind but oneDNN's: whether
// one takes a desc, and its factory (share_weights: false for one timed on scratch buffers).
// conv_choice.cc's timing tries each that takes the desc; plan_kernel builds the chosen one.
struct ProductKernel {
  ConvKernelKind kind;
  bool (*takes)(const Conv2dDesc& d);
  std::unique_ptr<OpKernel> (*make)(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights);
};
std::span<const ProductKernel> product_kernels();

// The kernel that runs `plan` for `d`. share_weights: false for one timed on scratch buffers.
// Throws dnnl::error when oneDNN has no implementation of `plan` for `d` on this CPU.
std::unique_ptr<OpKernel> plan_kernel(const Conv2dDesc& d, DnnlContext& ctx, const ConvPlan& plan,
                                      bool share_weights);

// The fixed rule: Winograd where it is preferred and this CPU has it, else direct, on oneDNN's
// blocked layout for kernels wider than 1x1 on a CPU without AVX-512, else on NHWC.
// Throws dnnl::error as plan_kernel does.
std::unique_ptr<OpKernel> default_kernel(const Conv2dDesc& d, DnnlContext& ctx);

// Whether `a` and `b` are oneDNN convolutions that would run the same primitive on the same
// layouts (timing one of them is enough).
bool same_convolution(const OpKernel& a, const OpKernel& b);

}  // namespace ic::cpu
