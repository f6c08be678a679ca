#include "runtime/precision.h"

namespace ic {

const char* precision_name(InferencePrecision precision) {
  switch (precision) {
    case InferencePrecision::float32: return "float32";
    case InferencePrecision::bfloat16: return "bfloat16";
    case InferencePrecision::int8: return "int8";
  }
  return "?";
}

std::string int8_layers_in_float32_note(const InferencePassStats& stats) {
  return std::to_string(stats.int8_layers_in_float32) +
         " of its int8 convolutions timed faster in float32 and run in float32";
}

Result<InferenceGraphOptions> graph_options_for(const InferenceModel& model,
                                                InferencePrecision precision, Backend& backend,
                                                InferenceGraphOptions base) {
  const bool bf16 = precision == InferencePrecision::bfloat16;
  base.compute = bf16 ? DType::bf16 : DType::f32;
  // bf16 activations only where the convolutions compute in bf16: elsewhere they would cost
  // conversions and change the answers for nothing (bf16 then answers as float32 does).
  base.activations = bf16 && backend.has_native_bf16() && backend.supports_bf16_activations()
                         ? DType::bf16
                         : DType::f32;
  // Where a layer computes in float32 anyway, its activations stay float32 too.
  if (base.activations == DType::bf16 && base.time_algorithms)
    base.conv_compute_type = [&backend](const Conv2dDesc& d) {
      return backend.conv_compute_type(d);
    };
  base.fuses_depthwise = [&backend](const Conv2dDesc& d) { return backend.fuses_depthwise(d); };
  base.int8.reset();
  base.int8_pays = nullptr;
  if (precision == InferencePrecision::int8) {
    if (!model.int8)
      return invalid_argument(model.checkpoint,
                              " is not an int8 export: --precision=int8 runs what "
                              "`export_model --format=int8` writes (it calibrates the scales)");
    base.int8 = *model.int8;
    // A layer whose float32 plan times faster stays float32 (on a CPU without VNNI, the
    // Winograd ones).
    if (base.time_algorithms)
      base.int8_pays = [&backend](const Conv2dDesc& d) { return backend.int8_conv_pays(d); };
  }
  return base;
}

}  // namespace ic
