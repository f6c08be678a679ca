// serve's --precision: the number format the served model computes in, fixed or chosen at
// load time. auto picks bfloat16 only where it is real and faster: the backend must have
// native bf16 convolutions (Backend::has_native_bf16; a CPU without AVX-512 BF16 or AMX
// computes "bf16" in float32), some layer of the bf16 graph must run in bf16 (each convolution
// is timed both ways and keeps float32 where that is faster: graph/precision_pass.h) AND a
// timing at the largest batch size must show the bf16 graph faster than the float32 one; else
// float32. auto never picks int8: int8 changes the answers,
// so it is asked for explicitly, for an int8 export (export_model --format=int8).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "runtime/inference_model.h"
#include "runtime/inference_runner.h"
#include "runtime/precision.h"

namespace ic {

enum class ServePrecision { automatic, float32, bfloat16, int8 };

// A compiled runner and why its precision was the one chosen.
struct PrecisionRunner {
  InferencePrecision precision = InferencePrecision::float32;
  std::unique_ptr<InferenceRunner> runner;
  // How the precision was chosen, for the load line: "asked for", "auto: ...".
  std::string reason;
};

// `model` compiled for `batch_sizes` on `backend` in the precision `requested` resolves to.
// A fixed precision is graph_options_for's (int8 without an int8 export: invalid_argument).
Result<PrecisionRunner> compile_in_precision(Backend& backend, const InferenceModel& model,
                                             const std::vector<int64_t>& batch_sizes,
                                             ServePrecision requested);

// auto's timing step on its own: both runners compiled, `runs` forwards of each on zeros at
// the largest batch size (after one warm-up; a runner of several sizes has timed them itself
// and is not timed again), the faster kept and the other freed.
// compile_in_precision calls it only when the backend has native bf16; where bf16 computes in
// float32 the two are the same computation and either may win.
Result<PrecisionRunner> faster_of_float32_and_bfloat16(Backend& backend,
                                                       const InferenceModel& model,
                                                       const std::vector<int64_t>& batch_sizes,
                                                       int runs = 3);

}  // namespace ic
