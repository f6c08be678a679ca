// The executor: passes, autodiff plan, kernels, memory plan, one arena, bindings.
#include "graph/compiled_graph.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/host_memory.h"
#include "graph/autodiff.h"
#include "graph/memory_plan.h"
#include "graph/op_profile.h"
#include "graph/passes.h"
#include "graph/step_buffers.h"

namespace ic {

namespace {

// After the kernel's backward: target += scratch (a later gradient contribution).
struct GradientAdd {
  float* target = nullptr;
  const float* scratch = nullptr;
  size_t count = 0;
};

struct BackwardStep {
  OpKernel* kernel = nullptr;
  size_t profile_entry = 0;             // OpProfile::entry, where profiling
  size_t adds_begin = 0, adds_end = 0;  // range in Executor::adds_
};

struct ForwardStep {
  OpKernel* kernel = nullptr;
  size_t profile_entry = 0;  // OpProfile::entry, where profiling
  std::string node;          // for forward_observing
  std::vector<const void*> inputs;
};

// Trainable parameters no loss depends on: their gradient is written as zero.
struct ZeroRange {
  size_t offset = 0, count = 0;
};

class Executor final : public CompiledGraph {
 public:
  explicit Executor(Backend& backend) : backend_(backend) {}
  ~Executor() override {
    if (profile_) profile_->print();
  }

  float* images() override { return images_; }
  int32_t* labels() override { return labels_; }
  const float* logits() const override { return logits_; }
  std::vector<const float*> loss_terms() const override { return losses_; }
  size_t activation_bytes() const override { return plan_.arena_bytes; }
  std::string summary() const override { return summary_; }

  void forward(const StepContext& ctx) override {
    for (const ForwardStep& step : forward_) {
      if (profile_) {
        profile_->run(step.profile_entry, false, [&] { step.kernel->forward(ctx); });
      } else {
        step.kernel->forward(ctx);
      }
    }
  }

  void forward_observing(const StepContext& ctx, const NodeObserver& before) override {
    for (const ForwardStep& step : forward_) {
      before(step.node, step.inputs);
      step.kernel->forward(ctx);
    }
  }

  void backward(const StepContext& ctx) override {
    for (const ZeroRange& range : zero_grads_)
      backend_.fill(grads_ + range.offset, 0.f, range.count);
    for (const BackwardStep& step : backward_) {
      if (profile_) {
        profile_->run(step.profile_entry, true, [&] { step.kernel->backward(ctx); });
      } else {
        step.kernel->backward(ctx);
      }
      for (size_t a = step.adds_begin; a < step.adds_end; ++a)
        backend_.add_inplace(adds_[a].target, adds_[a].scratch, adds_[a].count);
    }
  }

  Status build(const Graph& original, const ParamLayout& layout, const ParamBinding& binding,
               size_t keep_free_bytes);

 private:
  void* buffer(int32_t request) const {
    if (request < 0 || plan_.offset.empty()) return nullptr;
    if (requests_[static_cast<size_t>(request)].bytes == 0) return nullptr;
    return arena_.as<char>() + plan_.offset[static_cast<size_t>(request)];
  }

  Backend& backend_;
  std::vector<BufferRequest> requests_;
  MemoryPlan plan_;
  DeviceBuffer arena_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;
  std::vector<ForwardStep> forward_;
  std::vector<BackwardStep> backward_;
  std::vector<GradientAdd> adds_;
  std::vector<ZeroRange> zero_grads_;
  float* grads_ = nullptr;
  float* images_ = nullptr;
  int32_t* labels_ = nullptr;
  const float* logits_ = nullptr;
  std::vector<const float*> losses_;
  std::string summary_;
  std::unique_ptr<OpProfile> profile_;
};

// Conv and dense kernels skip their input-gradient computation when nothing needs it; every
// kernel of a graph that is not a training graph is compiled forward only.
OpDesc prepared_desc(const Node& node, const AutodiffPlan* autodiff) {
  OpDesc desc = node.desc;
  const bool training = autodiff != nullptr;
  const bool input_needs = training && autodiff->needs_grad[static_cast<size_t>(node.inputs.at(0))];
  if (auto* conv = std::get_if<Conv2dDesc>(&desc)) {
    conv->needs_input_grad = input_needs;
    conv->training = training;
  }
  if (auto* dense = std::get_if<DenseDesc>(&desc)) {
    dense->needs_input_grad = input_needs;
    dense->training = training;
  }
  if (auto* pool = std::get_if<Pool2dDesc>(&desc)) pool->training = training;
  return desc;
}

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

// An arena that cannot fit is refused before it is allocated: on the CPU an allocation of more
// than the machine has may even succeed and get the process killed when it is touched.
Status check_arena_fits(const Graph& graph, const Backend& backend, size_t arena,
                        size_t keep_free) {
  const std::optional<size_t> available = backend.available_memory();
  if (!available || arena + keep_free <= *available) return Status();
  const int64_t batch = graph.values.at(static_cast<size_t>(graph.images)).shape.n();
  const size_t room = *available > keep_free ? *available - keep_free : 0;
  // Activation memory grows in proportion to the batch (workspaces aside), and the input
  // pipeline's batches grow with it too: an estimate, with a tenth kept back for those.
  const auto fits = static_cast<int64_t>(0.9 * static_cast<double>(batch) *
                                         static_cast<double>(room) / static_cast<double>(arena));
  return error("one ", graph.training ? "training step" : "evaluation batch", " of ", batch,
               " images needs ", format_bytes(arena),
               " of activation memory (the graph's memory plan)",
               keep_free > 0 ? " and " + format_bytes(keep_free) + " more for the model state" : "",
               ", but ", backend.description(), " has ", format_bytes(*available), " available; ",
               fits >= 1 ? "the largest batch that fits is about " + std::to_string(fits) +
                               " images per process (lower the batch size, or split it into "
                               "micro-batches or over more processes)"
                         : "not even one image fits");
}

Status Executor::build(const Graph& original, const ParamLayout& layout,
                       const ParamBinding& binding, size_t keep_free_bytes) {
  if (layout.offset.size() != original.params.size())
    return error("parameter layout has ", layout.offset.size(), " entries for ",
                 original.params.size(), " graph parameters");
  const bool training = original.training;
  if (training && layout.trainable_count > 0 && binding.grads == nullptr)
    return error("a training graph needs ParamBinding::grads");
  if (layout.trainable_count > 0 && binding.weights == nullptr)
    return error("ParamBinding::weights is null");
  if (layout.state_count > 0 && binding.state == nullptr)
    return error("ParamBinding::state is null");

  PassStats pass_stats;
  const Graph graph = optimize_graph(original, &pass_stats);
  AutodiffPlan autodiff;
  if (training) {
    autodiff = plan_autodiff(graph);
  } else {
    autodiff.storage_root = storage_roots(graph);
  }
  const AutodiffPlan* ad = training ? &autodiff : nullptr;
  const size_t n = graph.nodes.size();

  kernels_.resize(n);
  std::vector<KernelSizes> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes[i];
    if (is_alias_node(node)) continue;
    auto kernel = backend_.compile(prepared_desc(node, ad));
    if (!kernel.ok())
      return kernel.status().with_context(std::string("compiling ") + op_name(node.desc) + " " +
                                          node.name);
    kernels_[i] = std::move(kernel).value();
    const OpKernel::BackwardReads reads = kernels_[i]->backward_reads();
    sizes[i] = KernelSizes{kernels_[i]->workspace_bytes(), kernels_[i]->saved_bytes(), reads.inputs,
                           reads.outputs};
  }

  IC_ASSIGN_OR_RETURN(StepBuffers buffers,
                      plan_step_buffers(graph, ad, autodiff.storage_root, sizes));
  requests_ = std::move(buffers.requests);
  plan_ = plan_memory(requests_, 64);
  IC_RETURN_IF_ERROR(check_arena_fits(original, backend_, plan_.arena_bytes, keep_free_bytes));
  IC_ASSIGN_OR_RETURN(arena_, backend_.allocate(std::max<size_t>(plan_.arena_bytes, 64)));

  auto weight = [&](ParamId p) -> void* {
    const auto index = static_cast<size_t>(p);
    // Kernels take parameters as void* (one list for every op); they only read them.
    if (graph.params[index].trainable)
      return const_cast<float*>(binding.weights) + layout.offset[index];
    return binding.state + layout.offset[index];
  };
  auto param_grad = [&](ParamId p) {
    return binding.grads + layout.offset[static_cast<size_t>(p)];
  };

  if (const auto grouping = OpProfile::requested())
    profile_ = std::make_unique<OpProfile>(backend_, *grouping);
  forward_.reserve(n);
  backward_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes[i];
    if (is_alias_node(node)) continue;
    const bool backward = training && autodiff.runs_backward[i];
    OpBindings b;
    for (ValueId in : node.inputs)
      b.inputs.push_back(buffer(buffers.activation[static_cast<size_t>(in)]));
    for (ValueId out : node.outputs)
      b.outputs.push_back(buffer(buffers.activation[static_cast<size_t>(out)]));
    for (ParamId p : node.params) b.params.push_back(weight(p));
    for (ParamId s : node.state) b.state.push_back(weight(s));
    b.saved = buffer(buffers.saved[i]);
    b.workspace = buffer(buffers.workspace[i]);
    const size_t adds_begin = adds_.size();
    if (training) {
      for (ValueId out : node.outputs)
        b.output_grads.push_back(backward ? buffer(buffers.gradient[static_cast<size_t>(out)])
                                          : nullptr);
      for (size_t s = 0; s < node.inputs.size(); ++s) {
        const auto in = static_cast<size_t>(node.inputs[s]);
        void* target = backward && autodiff.needs_grad[in] ? buffer(buffers.gradient[in]) : nullptr;
        void* scratch = buffer(buffers.input_grad_scratch[i][s]);
        b.input_grads.push_back(scratch != nullptr ? scratch : target);
        if (scratch != nullptr)
          adds_.push_back(GradientAdd{static_cast<float*>(target), static_cast<float*>(scratch),
                                      static_cast<size_t>(graph.values[in].shape.numel())});
      }
      for (size_t s = 0; s < node.params.size(); ++s) {
        const ParamId p = node.params[s];
        const bool trainable = graph.params[static_cast<size_t>(p)].trainable;
        float* target = backward && trainable ? param_grad(p) : nullptr;
        void* scratch = buffer(buffers.param_grad_scratch[i][s]);
        b.param_grads.push_back(scratch != nullptr ? scratch : target);
        if (scratch != nullptr)
          adds_.push_back(
              GradientAdd{target, static_cast<float*>(scratch),
                          static_cast<size_t>(graph.params[static_cast<size_t>(p)].shape.numel())});
      }
    }
    IC_RETURN_IF_ERROR(kernels_[i]->bind(b).with_context(std::string("binding ") +
                                                         op_name(node.desc) + " " + node.name));
    const size_t entry =
        profile_ ? profile_->entry(op_name(node.desc), node.name, *kernels_[i]) : 0;
    forward_.push_back(ForwardStep{kernels_[i].get(), entry, node.name, b.inputs});
    if (backward)
      backward_.push_back(BackwardStep{kernels_[i].get(), entry, adds_begin, adds_.size()});
  }
  std::reverse(backward_.begin(), backward_.end());

  if (training) {
    grads_ = binding.grads;
    for (size_t p = 0; p < graph.params.size(); ++p) {
      if (!graph.params[p].trainable || !autodiff.param_grad_writers[p].empty()) continue;
      zero_grads_.push_back(
          ZeroRange{layout.offset[p], static_cast<size_t>(graph.params[p].shape.numel())});
    }
  }

  auto value_ptr = [&](ValueId v) -> void* {
    return v == kNone ? nullptr : buffer(buffers.activation[static_cast<size_t>(v)]);
  };
  images_ = static_cast<float*>(value_ptr(graph.images));
  labels_ = static_cast<int32_t*>(value_ptr(graph.labels));
  logits_ = static_cast<const float*>(value_ptr(graph.logits));
  for (ValueId loss : graph.losses) losses_.push_back(static_cast<const float*>(value_ptr(loss)));

  summary_ = std::to_string(forward_.size()) + " kernels (" +
             std::to_string(pass_stats.fused_batch_norm_relu) + " BN+ReLU fused), " +
             std::to_string(backward_.size()) + " backward, " + std::to_string(requests_.size()) +
             " buffers in a " + mib(plan_.arena_bytes) + " arena (" + mib(plan_.naive_bytes) +
             " without reuse, " + mib(plan_.peak_live_bytes) + " live at the peak step)";
  return Status();
}

}  // namespace

Result<std::unique_ptr<CompiledGraph>> CompiledGraph::compile(const Graph& graph, Backend& backend,
                                                              const ParamLayout& layout,
                                                              const ParamBinding& binding,
                                                              size_t keep_free_bytes) {
  auto executor = std::make_unique<Executor>(backend);
  IC_RETURN_IF_ERROR(executor->build(graph, layout, binding, keep_free_bytes));
  return std::unique_ptr<CompiledGraph>(std::move(executor));
}

}  // namespace ic
