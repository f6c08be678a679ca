// Replaying a version's warm-up requests (serve/warmup.h) on the freshly loaded model before it
// becomes current, as TF Serving does before a version is AVAILABLE: the first requests then
// find the model's memory touched and its kernels' first-run work done. The model runs
// directly, not through the batcher, so the replay neither waits behind nor delays the version
// still serving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "serve/api.h"
#include "serve/served_model.h"

namespace ic {

struct WarmupReplay {
  std::string file;
  int64_t requests = 0;  // records replayed
  double milliseconds = 0;
};

// Replays the warm-up file of the version `model` was loaded from, if it has one (nullopt:
// none, a checkpoint or a version without the file). Every record must convert as a request
// to the server would (`options`: the image size and the pixel limit); an error names the file
// and the record. `model` must not be serving yet (ServedModel::run takes one caller).
Result<std::optional<WarmupReplay>> replay_warmup(ServedModel& model,
                                                  const InstanceOptions& options);

}  // namespace ic
