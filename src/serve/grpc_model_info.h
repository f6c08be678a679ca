// What the gRPC API says about the served model, and what it accepts as a model config:
// GetModelMetadata's SignatureDefMap (serving_default as the REST metadata reports it, plus
// classify, the signature of encoded images) and HandleReloadConfigRequest's check.
#pragma once

#include <string>

#include "core/status.h"
#include "proto/tensorflow_serving/get_model_metadata.pb.h"
#include "proto/tensorflow_serving/model_management.pb.h"
#include "runtime/checkpoint_meta.h"

namespace ic {

// The classes Classify answers per example, best first (REST :classify's default top_k).
inline constexpr int kClassifyTopK = 5;

// serving_default: images DT_FLOAT [-1, H, W, 3]; classify: image_bytes DT_STRING [-1]; both
// answer classes DT_INT64 [-1] and probabilities DT_FLOAT [-1, C].
tensorflow::serving::SignatureDefMap signature_def_map(const CheckpointMeta& meta);

// A reload config is accepted when it names only the served model (`served_name`), with no
// base_path or `model_dir` as its base_path: serve serves one model, and a config cannot add,
// remove or move models (invalid_argument, saying so). Before the first load, unavailable.
Status check_reload_config(const std::string& served_name, const std::string& model_dir,
                           const tensorflow::serving::ModelServerConfig& config);

}  // namespace ic
