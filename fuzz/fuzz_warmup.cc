// serve's warm-up file reader (serve/warmup): the input is a whole
// assets.extra/tf_serving_warmup_requests file, TFRecord records of PredictionLog messages.
// A read either gives at most TF Serving's 1000 records, each a predict_log or a classify_log,
// or an error that names the file and says what is wrong.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "fuzz/quiet_protobuf.h"
#include "serve/warmup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("tf_serving_warmup_requests", ic::fuzz::as_view(data, size));
  ic::Result<std::vector<tensorflow::serving::PredictionLog>> logs = ic::read_warmup_requests(path);
  if (!logs.ok()) {
    if (logs.status().message().find(path) == std::string::npos) std::abort();
    return 0;
  }
  if (static_cast<int64_t>(logs->size()) > ic::kMaxWarmupRecords) std::abort();
  // Every record takes at least the 16 bytes of its framing.
  if (logs->size() * 16 > size) std::abort();
  for (const tensorflow::serving::PredictionLog& log : *logs)
    if (!log.has_predict_log() && !log.has_classify_log()) std::abort();
  return 0;
}
