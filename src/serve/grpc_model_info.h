// What the gRPC API says about a served model: GetModelMetadata's SignatureDefMap
// (serving_default as the REST metadata reports it, plus classify, the signature of encoded
// images).
#pragma once

#include <string>

#include "proto/tensorflow_serving/get_model_metadata.pb.h"
#include "runtime/checkpoint_meta.h"

namespace ic {

// The classes Classify answers per example, best first (REST :classify's default top_k).
inline constexpr int kClassifyTopK = 5;

// serving_default: images DT_FLOAT [-1, H, W, 3]; classify: image_bytes DT_STRING [-1]; both
// answer classes DT_INT64 [-1] and probabilities DT_FLOAT [-1, C].
tensorflow::serving::SignatureDefMap signature_def_map(const CheckpointMeta& meta);

}  // namespace ic
