// Inception v3 training throughput on one GPU: the whole step (forward, backward, weight
// decay, RMSProp, EMA) on a synthetic batch that stays on the device, as
// torch_inception_bench.py does for torchvision. Prints one parseable line:
//   RESULT ours precision=bfloat16 batch=128 images_per_sec=... step_ms=... peak_mib=...
//   planned_mib=...
//
//   train_bench --precision=bfloat16 --batch=128 --steps=30 --warmup=5 --capture=1
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/compiled_graph.h"
#include "models/model.h"
#include "train/model_state.h"

namespace {

struct Args {
  std::string precision = "bfloat16";
  long batch = 128, steps = 30, warmup = 5, image = 299, device = 0;
  bool capture = true;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) return false;
    const std::string key = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    if (key == "precision")
      a.precision = value;
    else if (key == "batch")
      a.batch = std::atol(value.c_str());
    else if (key == "steps")
      a.steps = std::atol(value.c_str());
    else if (key == "warmup")
      a.warmup = std::atol(value.c_str());
    else if (key == "image")
      a.image = std::atol(value.c_str());
    else if (key == "device")
      a.device = std::atol(value.c_str());
    else if (key == "capture")
      a.capture = value != "0";
    else
      return false;
  }
  return (a.precision == "bfloat16" || a.precision == "float32") && a.batch > 0 && a.steps > 0;
}

int fail(const std::string& what, const ic::Status& s) {
  std::fprintf(stderr, "train_bench: %s: %s\n", what.c_str(), s.message().c_str());
  return 1;
}

double used_mib() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
  return static_cast<double>(total - free) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    std::fprintf(stderr,
                 "usage: train_bench [--precision=bfloat16|float32] [--batch=N] [--steps=N] "
                 "[--warmup=N] [--image=299] [--device=0] [--capture=1]\n");
    return 2;
  }
  using namespace ic;
  BackendOptions bo;
  bo.kind = DeviceKind::cuda;
  bo.device_index = static_cast<int>(a.device);
  auto backend = make_backend(bo);
  if (!backend.ok()) return fail("backend", backend.status());
  Backend& be = **backend;
  std::printf("device: %s\n", be.description().c_str());
  const double baseline_mib = used_mib();

  auto options = default_model_options("inception_v3");
  if (!options.ok()) return fail("model options", options.status());
  options->batch_size = a.batch;
  options->height = options->width = static_cast<int>(a.image);
  options->compute = a.precision == "bfloat16" ? DType::bf16 : DType::f32;
  auto graph = build_model(*options);
  if (!graph.ok()) return fail("build_model", graph.status());
  auto state = ModelState::create(be, *graph, find_optimizer("RMS"), true, true);
  if (!state.ok()) return fail("model state", state.status());
  if (Status s = (*state)->initialize(1); !s.ok()) return fail("initialize", s);
  const auto t_compile = std::chrono::steady_clock::now();
  auto compiled = CompiledGraph::compile(*graph, be, (*state)->layout(), (*state)->train_binding());
  if (!compiled.ok()) return fail("compile", compiled.status());
  const double compile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile).count();

  // One synthetic batch, uploaded once (the torch side also keeps its batch on the device).
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(static_cast<size_t>(a.batch * a.image * a.image * 3));
  for (float& v : images) v = pixel(gen);
  std::vector<int32_t> labels(static_cast<size_t>(a.batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(1 + i % 1000);
  be.upload((*compiled)->images(), images.data(), images.size() * sizeof(float));
  be.upload((*compiled)->labels(), labels.data(), labels.size() * sizeof(int32_t));

  ModelState& st = **state;
  const ParamLayout& layout = st.layout();
  const Optimizer& rmsprop = *st.optimizer();
  const std::vector<UpdateRange> arena =
      describe_update_ranges(layout, st.params(), {{size_t{0}, layout.trainable_count}});
  OptimizerStep opt;
  opt.weights = st.weights();
  opt.grads = st.grads();
  for (size_t k = 0; k < st.slot_count(); ++k) opt.slots[k] = st.slot(k);
  opt.count = layout.trainable_count;
  opt.decayed = layout.decayed_count;
  opt.variables = arena[0].variables;
  opt.learning_rate = 0.165f * a.batch / 256.f;
  opt.weight_decay = 4e-5f;  // d(4e-5 Σw²/2)/dw joins the gradient (RMS's decay is coupled)
  bool captured = false;
  auto step = [&](int64_t i) -> Status {
    const StepContext ctx{static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull, i};
    if (captured) {
      IC_RETURN_IF_ERROR(be.replay(ctx));
    } else {
      (*compiled)->forward(ctx);
      (*compiled)->backward(ctx);
    }
    opt.step = i + 1;
    rmsprop.apply(be, opt);
    be.ema_update(st.ema_weights(), st.weights(), layout.trainable_count, 0.995f);
    return be.status();
  };

  for (long i = 0; i < a.warmup; ++i)
    if (Status s = step(i); !s.ok()) return fail("warm-up step", s);
  be.synchronize();
  if (a.capture && be.supports_capture()) {
    Status s = be.begin_capture();
    if (s.ok()) {
      (*compiled)->forward(StepContext{});
      (*compiled)->backward(StepContext{});
      s = be.end_capture();
    }
    if (s.ok())
      captured = true;
    else
      std::printf("capture unavailable, timing plain launches: %s\n", s.message().c_str());
    if (Status c = step(a.warmup); !c.ok()) return fail("first captured step", c);
    be.synchronize();
  }

  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < a.steps; ++i)
    if (Status s = step(a.warmup + 1 + i); !s.ok()) return fail("step", s);
  be.synchronize();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (Status s = be.status(); !s.ok()) return fail("after the timed steps", s);

  std::vector<const float*> terms = (*compiled)->loss_terms();
  float loss = 0.f;
  if (!terms.empty()) be.download(&loss, terms[0], sizeof(float));
  const double ips = static_cast<double>(a.batch * a.steps) / seconds;
  const double peak = used_mib();
  std::printf("compile %.1f s, capture %s, main loss after %ld steps %.4f\n", compile_s,
              captured ? "on" : "off", a.warmup + 1 + a.steps, loss);
  std::printf(
      "RESULT ours precision=%s batch=%ld images_per_sec=%.1f step_ms=%.2f peak_mib=%.0f "
      "context_mib=%.0f planned_activation_mib=%.0f\n",
      a.precision.c_str(), a.batch, ips, 1e3 * seconds / a.steps, peak, baseline_mib,
      static_cast<double>((*compiled)->activation_bytes()) / (1 << 20));
  return 0;
}
