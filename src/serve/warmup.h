// The warm-up requests of an export version, as TensorFlow Serving reads them: the file
// <version>/assets.extra/tf_serving_warmup_requests is a TFRecord file whose records are
// serialized tensorflow.serving.PredictionLog messages, replayed before the version serves
// (serve/warmup_replay.h). Reading checks everything that needs no model: the framing, each
// record's message, its kind (predict_log or classify_log, the two this server answers) and TF
// Serving's limit on the number of records. Nothing here needs the server:
// fuzz/fuzz_warmup.cc runs it on outside bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "infer/warmup_export.h"  // the file's name and TF Serving's limit
#include "proto/tensorflow_serving/prediction_log.pb.h"

namespace ic {

// The warm-up file of the version directory `version_dir`.
std::string warmup_file_of(const std::string& version_dir);

// Every record of the warm-up file at `path`, in order. A damaged record (framing, message,
// an empty or unanswerable kind) is data_loss or invalid_argument naming the file and the
// record's number (from 1); more than kMaxWarmupRecords records is resource_exhausted naming
// the limit.
Result<std::vector<tensorflow::serving::PredictionLog>> read_warmup_requests(
    const std::string& path);

}  // namespace ic
