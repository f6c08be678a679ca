// Times our training step and inference pass for one model on synthetic data, the way
// bench/cpu_inception_v3.sh compares them with PyTorch: same batch, threads and optimizer.
// Prints one "ours <what>_images_per_sec=... gflops=..." line.
//
//   inception_bench --mode=train|infer --model=inception_v3 --batch=32 --size=299
//                   --threads=2 --warmup=2 --steps=5 [--bf16] [--unfolded]
//
// --mode=infer runs what the inference programs run: the graph of prepare_inference_graph
// (batch norm folded into the convolutions, ReLUs fused, forward-only kernels, convolution
// implementations timed at compile time; IC_CONV_TIMING=0 keeps the fixed ones). --unfolded
// runs the model's evaluation graph through the Evaluator instead, as before, to compare.
// Each inference step uploads the images, runs forward and downloads the logits.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/openmp_env.h"
#include "graph/compiled_graph.h"
#include "graph/inference_graph.h"
#include "models/model.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace {

struct Args {
  std::string mode = "train", model = "inception_v3";
  int batch = 32, size = 299, threads = 2, warmup = 2, steps = 5;
  bool bf16 = false;
  bool unfolded = false;
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const std::string key = arg.substr(0, eq),
                      value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "--mode")
      a->mode = value;
    else if (key == "--model")
      a->model = value;
    else if (key == "--batch")
      a->batch = std::atoi(value.c_str());
    else if (key == "--size")
      a->size = std::atoi(value.c_str());
    else if (key == "--threads")
      a->threads = std::atoi(value.c_str());
    else if (key == "--warmup")
      a->warmup = std::atoi(value.c_str());
    else if (key == "--steps")
      a->steps = std::atoi(value.c_str());
    else if (key == "--bf16")
      a->bf16 = true;
    else if (key == "--unfolded")
      a->unfolded = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return false;
    }
  }
  return (a->mode == "train" || a->mode == "infer") && a->batch > 0 && a->steps > 0;
}

int fail(const ic::Status& status) {
  std::fprintf(stderr, "inception_bench: %s\n", status.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ic::use_short_openmp_spin(argv);
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: inception_bench --mode=train|infer [--model= --batch= --size= "
                 "--threads= --warmup= --steps= --bf16 --unfolded]\n");
    return 2;
  }
  auto options = ic::default_model_options(a.model);
  if (!options.ok()) return fail(options.status());
  options->batch_size = a.batch;
  options->height = options->width = a.size;
  options->training = a.mode == "train";
  const bool folded = a.mode == "infer" && !a.unfolded;
  options->build_losses = !folded;  // the inference programs' graph has no loss
  options->compute = a.bf16 ? ic::DType::bf16 : ic::DType::f32;
  auto graph = ic::build_model(*options);
  if (!graph.ok()) return fail(graph.status());

  ic::BackendOptions backend_options;
  backend_options.num_threads = a.threads;
  auto backend = ic::make_backend(backend_options);
  if (!backend.ok()) return fail(backend.status());
  const bool training = a.mode == "train";
  auto state = ic::ModelState::create(**backend, *graph, ic::find_optimizer("RMS"), training,
                                      /*moving_average=*/training);
  if (!state.ok()) return fail(state.status());
  if (ic::Status s = (*state)->initialize(0); !s.ok()) return fail(s);

  const size_t image_floats = static_cast<size_t>(a.batch) * a.size * a.size * 3;
  std::vector<float> images(image_floats);
  std::vector<int32_t> labels(static_cast<size_t>(a.batch));
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  for (float& v : images) v = pixel(rng);
  for (int32_t& l : labels) l = 1 + static_cast<int32_t>(rng() % (options->num_classes - 1));

  std::function<void()> run;
  std::unique_ptr<ic::Trainer> trainer;
  std::unique_ptr<ic::Evaluator> evaluator;
  ic::Graph executed = *graph;  // what the FLOP count is of (the folded graph: a bit less)
  ic::DeviceParams params;
  std::unique_ptr<ic::CompiledGraph> compiled;
  std::vector<float> logits;
  if (folded) {
    // The initialised values, read back by name as a checkpoint would give them.
    std::map<std::string, ic::TensorView> tensors;
    for (ic::TensorView& view : (*state)->checkpoint_tensors()) tensors[view.name] = view;
    const ic::ParamSource source = [&](const std::string& name) {
      auto it = tensors.find(name);
      if (it == tensors.end()) return ic::ParamBytes{};
      const ic::TensorView& v = it->second;
      return ic::ParamBytes{v.data, static_cast<size_t>(v.shape.numel()) * sizeof(float)};
    };
    auto inference = ic::prepare_inference_graph(*graph, source);
    if (!inference.ok()) return fail(inference.status());
    auto uploaded = ic::upload_params(**backend, *inference);
    if (!uploaded.ok()) return fail(uploaded.status());
    params = std::move(*uploaded);
    auto c =
        ic::CompiledGraph::compile(inference->graph, **backend, params.layout, params.binding());
    if (!c.ok()) return fail(c.status());
    compiled = std::move(*c);
    std::fprintf(stderr, "inference graph: %d batch norms folded, %d ReLUs fused; %s\n",
                 inference->stats.folded_batch_norm, inference->stats.fused_conv_relu,
                 compiled->summary().c_str());
    executed = inference->graph;
    logits.resize(static_cast<size_t>(a.batch * options->num_classes));
    run = [&] {
      (*backend)->upload(compiled->images(), images.data(), images.size() * sizeof(float));
      compiled->forward({});
      (*backend)->download(logits.data(), compiled->logits(), logits.size() * sizeof(float));
    };
  } else if (training) {
    ic::TrainRecipe recipe;
    recipe.schedule.train_batch_size = a.batch;
    auto t = ic::Trainer::create(**state, *graph, recipe);
    if (!t.ok()) return fail(t.status());
    trainer = std::move(*t);
    run = [&] { trainer->step(images.data(), labels.data(), /*want_loss=*/false); };
  } else {
    auto e = ic::Evaluator::create(**state, *graph, 4e-5f);
    if (!e.ok()) return fail(e.status());
    evaluator = std::move(*e);
    evaluator->begin();
    run = [&] { evaluator->run_batch(images.data(), labels.data()); };
  }
  for (int i = 0; i < a.warmup; ++i) run();
  (*backend)->synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < a.steps; ++i) run();
  (*backend)->synchronize();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double images_per_sec = static_cast<double>(a.batch) * a.steps / seconds;
  // Training is about 3x the forward pass's FLOPs (forward, backward data, backward weights).
  const double forward_flops = 2.0 * static_cast<double>(executed.multiply_adds()) / a.batch;
  const double gflops = images_per_sec * forward_flops * (training ? 3.0 : 1.0) / 1e9;
  std::printf("ours %s_images_per_sec=%.3f gflops=%.1f\n", training ? "train" : "infer",
              images_per_sec, gflops);
  return 0;
}
