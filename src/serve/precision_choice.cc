#include "serve/precision_choice.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace ic {
namespace {

// The fixed precision a request names; nullopt for auto.
std::optional<InferencePrecision> fixed_precision(ServePrecision requested) {
  struct Row {
    ServePrecision requested;
    std::optional<InferencePrecision> precision;
  };
  static const Row kTable[] = {
      {ServePrecision::automatic, std::nullopt},
      {ServePrecision::float32, InferencePrecision::float32},
      {ServePrecision::bfloat16, InferencePrecision::bfloat16},
      {ServePrecision::int8, InferencePrecision::int8},
  };
  for (const Row& row : kTable) {
    if (row.requested == requested) return row.precision;
  }
  return std::nullopt;
}

Result<std::unique_ptr<InferenceRunner>> compile(Backend& backend, const InferenceModel& model,
                                                 const std::vector<int64_t>& batch_sizes,
                                                 InferencePrecision precision) {
  IC_ASSIGN_OR_RETURN(const InferenceGraphOptions options,
                      graph_options_for(model, precision, backend));
  return InferenceRunner::create(backend, model, batch_sizes, options);
}

// The fastest of `runs` forwards of `batch` zero images, in seconds (after one warm-up run,
// which also touches every buffer once). A runner that timed its graphs when it was created
// (several batch sizes: InferenceRunner::timed_seconds) is not timed again.
double fastest_forward(InferenceRunner& runner, int64_t batch, int runs) {
  if (const double timed = runner.timed_seconds(batch); timed > 0) return timed;
  const std::vector<float> images(static_cast<size_t>(batch * runner.image_floats()), 0.f);
  std::vector<float> logits(static_cast<size_t>(batch * runner.num_classes()));
  runner.run(batch, images.data(), logits.data());
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    runner.run(batch, images.data(), logits.data());
    fastest = std::min(
        fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return fastest;
}

}  // namespace

Result<PrecisionRunner> faster_of_float32_and_bfloat16(Backend& backend,
                                                       const InferenceModel& model,
                                                       const std::vector<int64_t>& batch_sizes,
                                                       int runs) {
  if (batch_sizes.empty()) return invalid_argument("no batch size to time");
  const int64_t largest = *std::max_element(batch_sizes.begin(), batch_sizes.end());
  // One runner alive at a time, so that choosing costs no more memory than the precision
  // chosen (two at once leave the process hundreds of MB larger after the loser is freed, and
  // under a memory limit that is room requests no longer have): float32 is timed and freed,
  // then bfloat16; float32 is compiled again only when it wins.
  double f32_seconds = 0;
  {
    IC_ASSIGN_OR_RETURN(const std::unique_ptr<InferenceRunner> f32,
                        compile(backend, model, batch_sizes, InferencePrecision::float32));
    f32_seconds = fastest_forward(*f32, largest, runs);
  }
  PrecisionRunner kept{InferencePrecision::bfloat16, nullptr, ""};
  IC_ASSIGN_OR_RETURN(kept.runner, compile(backend, model, batch_sizes, kept.precision));
  const double bf16_seconds = fastest_forward(*kept.runner, largest, runs);
  // Where every convolution timed faster in float32, the bf16 graph is the float32 one.
  const InferencePassStats bf16_stats = kept.runner->pass_stats();
  const bool any_bf16 = bf16_stats.bf16_activations > 0;
  // Ties keep float32: bf16 is only worth its rounding when it buys time.
  if (!any_bf16 || !(bf16_seconds < f32_seconds)) {
    kept.runner.reset();
    kept.precision = InferencePrecision::float32;
    IC_ASSIGN_OR_RETURN(kept.runner, compile(backend, model, batch_sizes, kept.precision));
  }
  std::ostringstream reason;
  reason.precision(3);
  reason << "auto: a batch of " << largest << " took " << f32_seconds * 1e3 << " ms in float32, "
         << bf16_seconds * 1e3 << " ms in bfloat16 (" << bf16_stats.float32_convolutions
         << " convolutions timed faster in float32, " << bf16_stats.bf16_activations
         << " values in bf16)";
  kept.reason = reason.str();
  return kept;
}

Result<PrecisionRunner> compile_in_precision(Backend& backend, const InferenceModel& model,
                                             const std::vector<int64_t>& batch_sizes,
                                             ServePrecision requested) {
  if (const std::optional<InferencePrecision> fixed = fixed_precision(requested)) {
    PrecisionRunner chosen{*fixed, nullptr, "asked for"};
    IC_ASSIGN_OR_RETURN(chosen.runner, compile(backend, model, batch_sizes, *fixed));
    // int8 layers the backend timed faster in float32 run in float32 (docs/int8.md).
    const InferencePassStats& stats = chosen.runner->pass_stats();
    if (stats.int8_layers_in_float32 > 0)
      chosen.reason += " (" + int8_layers_in_float32_note(stats) + ")";
    return chosen;
  }
  if (!backend.has_native_bf16()) {
    PrecisionRunner chosen{InferencePrecision::float32, nullptr,
                           "auto: this backend has no native bf16 convolutions"};
    IC_ASSIGN_OR_RETURN(chosen.runner,
                        compile(backend, model, batch_sizes, InferencePrecision::float32));
    return chosen;
  }
  return faster_of_float32_and_bfloat16(backend, model, batch_sizes);
}

}  // namespace ic
