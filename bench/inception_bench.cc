// Times our training step and inference pass for one model on synthetic data, the way
// bench/cpu_inception_v3.sh compares them with PyTorch: same batch, threads and optimizer.
// Prints one "ours <what>_images_per_sec=... gflops=... gbytes_per_sec=... precision=..." line.
//
//   inception_bench --mode=train|infer --model=inception_v3 --batch=32 --size=299
//                   --threads=2 --warmup=2 --steps=5 [--precision=float32|bfloat16|int8]
//                   [--unfolded] [--write_onnx=PATH] [--int8_quantize_nodes] [--slice=N]
//
// --precision is the number format, as classify's and serve's --precision name it
// (runtime/precision.h); --bf16 is the older spelling of --precision=bfloat16. Training takes
// float32 and bfloat16. --precision=int8 (inference) quantizes on the spot: the weight scales
// are the folded weights' per-channel ones and the input scales come from one forward over the
// random images (random_int8_scales.h), so its figures are speed only; the output line says so.
// --int8_quantize_nodes keeps a Quantize node before every int8 layer instead of letting the
// convolutions before them write u8 (graph/quantize_pass.h's write_int8_outputs), to compare.
// --write_onnx writes the ONNX export (infer/onnx_export.h) of the same random weights and
// exits, for the ONNX Runtime and OpenVINO peers of bench/cpu_precision.sh.
//
// --mode=infer runs what the inference programs run: the graph of prepare_inference_graph
// (batch norm folded into the convolutions, ReLUs fused, forward-only kernels, convolution
// implementations timed at compile time; IC_CONV_TIMING=0 keeps the fixed ones), through an
// InferenceRunner compiled as serve compiles its buckets: 1, 2, 4, ... up to --batch, the
// batch run as the slices of least time per image (runtime/inference_runner.h; stderr says
// which). --slice=N compiles N and --batch only and runs the batch as slices of N (N =
// --batch: whole, with one compiled graph). --unfolded
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
#include "infer/onnx_export.h"
#include "models/model.h"
#include "random_int8_scales.h"
#include "runtime/inference_runner.h"
#include "runtime/precision.h"
#include "train/model_state.h"
#include "train/recipe.h"
#include "train/trainer.h"

namespace {

struct Args {
  std::string mode = "train", model = "inception_v3";
  int batch = 32, size = 299, threads = 2, warmup = 2, steps = 5;
  int slice = 0;  // 0: chosen by timing, as serve does
  ic::InferencePrecision precision = ic::InferencePrecision::float32;
  bool unfolded = false;
  bool int8_quantize_nodes = false;
  std::string write_onnx;
};

// --precision's names, as runtime/precision.h spells them.
constexpr ic::InferencePrecision kPrecisions[] = {ic::InferencePrecision::float32,
                                                  ic::InferencePrecision::bfloat16,
                                                  ic::InferencePrecision::int8};

bool parse_precision(const std::string& name, ic::InferencePrecision* precision) {
  for (ic::InferencePrecision p : kPrecisions)
    if (name == ic::precision_name(p)) {
      *precision = p;
      return true;
    }
  std::fprintf(stderr, "--precision=%s: expected float32, bfloat16 or int8\n", name.c_str());
  return false;
}

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
    else if (key == "--slice")
      a->slice = std::atoi(value.c_str());
    else if (key == "--precision") {
      if (!parse_precision(value, &a->precision)) return false;
    } else if (key == "--bf16")
      a->precision = ic::InferencePrecision::bfloat16;
    else if (key == "--unfolded")
      a->unfolded = true;
    else if (key == "--int8_quantize_nodes")
      a->int8_quantize_nodes = true;
    else if (key == "--write_onnx")
      a->write_onnx = value;
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return false;
    }
  }
  if (!a->write_onnx.empty() && a->mode != "infer") {
    std::fprintf(stderr, "--write_onnx exports the inference graph: --mode=infer only\n");
    return false;
  }
  if (a->precision == ic::InferencePrecision::int8 && (a->mode != "infer" || a->unfolded)) {
    std::fprintf(stderr, "--precision=int8 runs the folded inference graph: --mode=infer only\n");
    return false;
  }
  return (a->mode == "train" || a->mode == "infer") && a->batch > 0 && a->steps > 0;
}

// The initialised values as a trained model would hold them, for the exporters and the
// precision options (runtime/precision.h reads the model's int8 table).
ic::InferenceModel random_model(const ic::ModelOptions& options,
                                const std::vector<ic::TensorView>& tensors) {
  ic::InferenceModel model;
  model.checkpoint = "random initial weights (inception_bench)";
  model.meta.model = options.name;
  model.meta.num_classes = options.num_classes;
  model.meta.height = options.height;
  model.meta.width = options.width;
  model.meta.depth_multiplier = options.depth_multiplier;
  model.options = options;
  model.options.training = false;
  model.options.build_losses = false;
  for (const ic::TensorView& v : tensors) {
    const auto* bytes = static_cast<const char*>(v.data);
    model.weights[v.name] = ic::TensorEntry{
        v.name, v.dtype, v.shape,
        std::string(bytes, static_cast<size_t>(v.shape.numel()) * ic::dtype_size(v.dtype))};
  }
  return model;
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
                 "--threads= --warmup= --steps= --precision=float32|bfloat16|int8 --unfolded "
                 "--int8_quantize_nodes "
                 "--write_onnx=PATH]\n");
    return 2;
  }
  auto options = ic::default_model_options(a.model);
  if (!options.ok()) return fail(options.status());
  options->batch_size = a.batch;
  options->height = options->width = a.size;
  options->training = a.mode == "train";
  const bool folded = a.mode == "infer" && (!a.unfolded || !a.write_onnx.empty());
  options->build_losses = !folded;  // the inference programs' graph has no loss
  // The folded graph takes its number format from graph_options_for below.
  options->compute =
      !folded && a.precision == ic::InferencePrecision::bfloat16 ? ic::DType::bf16 : ic::DType::f32;
  ic::BackendOptions backend_options;
  backend_options.num_threads = a.threads;
  auto backend = ic::make_backend(backend_options);
  if (!backend.ok()) return fail(backend.status());
  // Training and the unfolded evaluation hold their activations as the trainers would.
  if (!folded && a.precision == ic::InferencePrecision::bfloat16)
    options->activations = ic::activations_for(ic::Precision::bfloat16, **backend);
  auto graph = ic::build_model(*options);
  if (!graph.ok()) return fail(graph.status());
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
  std::string precision_note = ic::precision_name(a.precision);
  std::unique_ptr<ic::InferenceRunner> runner;
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
    ic::InferenceModel model = random_model(*options, (*state)->checkpoint_tensors());
    if (!a.write_onnx.empty()) {
      if (ic::Status s = ic::export_onnx(model, a.write_onnx); !s.ok()) return fail(s);
      std::printf("wrote %s\n", a.write_onnx.c_str());
      return 0;
    }
    if (a.precision == ic::InferencePrecision::int8) {
      auto table = ic::random_data_int8_scales(*graph, source, **backend, images);
      if (!table.ok()) return fail(table.status());
      std::fprintf(stderr,
                   "int8: %zu layers quantized; scales from one forward over %lld random images "
                   "(speed only, not an accuracy calibration)\n",
                   table->layers.size(), static_cast<long long>(table->calibration_images));
      model.int8 = std::move(*table);
      precision_note += " int8_scales=random_data_speed_only";
    }
    ic::InferenceGraphOptions base;
    auto graph_options = ic::graph_options_for(model, a.precision, **backend, base);
    if (!graph_options.ok()) return fail(graph_options.status());
    graph_options->int8_outputs = !a.int8_quantize_nodes;
    std::vector<int64_t> sizes = {a.batch};
    if (a.slice > 0 && a.slice < a.batch) sizes.push_back(a.slice);
    for (int64_t size = 1; a.slice == 0 && size < a.batch; size *= 2) sizes.push_back(size);
    auto r = ic::InferenceRunner::create(**backend, model, sizes, *graph_options);
    if (!r.ok()) return fail(r.status());
    runner = std::move(*r);
    if (a.slice > 0) {
      if (ic::Status s = runner->run_as_slices(a.batch, a.slice); !s.ok()) return fail(s);
    }
    const int64_t slice = runner->slice_of(a.batch);
    const ic::InferencePassStats& stats = runner->pass_stats(slice);
    const std::string how = runner->how_it_runs(a.batch);
    std::fprintf(stderr,
                 "inference graph: %d batch norms folded, %d ReLUs and %d other activations "
                 "fused, %d average pools "
                 "after their 1x1 convolution, %d depthwise convolutions fused into the pointwise "
                 "one before, %d values in bf16 (%d casts, %d convolutions "
                 "timed faster in f32), %d int8 "
                 "convolutions writing u8, %d int8 layers timed faster in f32, %d pools and %d "
                 "concatenations on u8 (%d "
                 "requantized); batch %d runs %s; the graph of %lld: %s\n",
                 stats.folded_batch_norm, stats.fused_conv_relu, stats.fused_conv_activation,
                 stats.pools_after_conv, stats.fused_depthwise, stats.bf16_activations, stats.casts,
                 stats.float32_convolutions, stats.int8_outputs, stats.int8_layers_in_float32,
                 stats.u8_pools, stats.u8_concats, stats.requantized, a.batch, how.c_str(),
                 static_cast<long long>(slice), runner->compiled_graph(slice).summary().c_str());
    precision_note += " batch_runs=" + how;
    executed = runner->graph(a.batch);
    logits.resize(static_cast<size_t>(a.batch * options->num_classes));
    run = [&] { runner->run(a.batch, images.data(), logits.data()); };
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
  // Memory traffic the same way: Graph::bytes_accessed (every op's values and parameters, no
  // cache reuse between ops), which bounds depthwise and elementwise layers.
  const double forward_bytes = static_cast<double>(executed.bytes_accessed()) / a.batch;
  const double gbytes = images_per_sec * forward_bytes * (training ? 3.0 : 1.0) / 1e9;
  std::printf("ours %s_images_per_sec=%.3f gflops=%.1f gbytes_per_sec=%.1f precision=%s\n",
              training ? "train" : "infer", images_per_sec, gflops, gbytes, precision_note.c_str());
  return 0;
}
