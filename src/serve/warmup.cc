#include "serve/warmup.h"

#include <array>

#include "io/file_system.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

using tensorflow::serving::PredictionLog;

// The kinds a record may hold, with what a record of that kind means here: null for the two
// that are replayed, else why it is refused.
struct LogKind {
  PredictionLog::LogTypeCase kind;
  const char* refusal;
};
constexpr std::array<LogKind, 6> kLogKinds = {{
    {PredictionLog::kPredictLog, nullptr},
    {PredictionLog::kClassifyLog, nullptr},
    {PredictionLog::kRegressLog, "a regress_log (this server answers no Regress)"},
    {PredictionLog::kMultiInferenceLog,
     "a multi_inference_log (this server answers no MultiInference)"},
    {PredictionLog::kSessionRunLog, "a session_run_log (TF Serving does not replay those either)"},
    {PredictionLog::LOG_TYPE_NOT_SET, "a PredictionLog with no request in it"},
}};

Status check_kind(const PredictionLog& log, const std::string& path, int64_t record) {
  for (const LogKind& kind : kLogKinds) {
    if (kind.kind != log.log_type_case()) continue;
    if (!kind.refusal) return Status();
    return invalid_argument(path, ": warm-up record ", record, " is ", kind.refusal,
                            "; only predict_log and classify_log are replayed");
  }
  return invalid_argument(path, ": warm-up record ", record, " has an unknown kind ",
                          static_cast<int>(log.log_type_case()));
}

}  // namespace

std::string warmup_file_of(const std::string& version_dir) {
  return join_path(version_dir, kWarmupRequestsFile);
}

Result<std::vector<PredictionLog>> read_warmup_requests(const std::string& path) {
  IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(path));
  std::vector<PredictionLog> logs;
  std::string bytes;
  for (int64_t record = 1;; ++record) {
    Result<bool> more = reader.read(&bytes);
    if (!more.ok()) {
      return error(more.status().code(), "warm-up record ", record, ": ", more.status().message());
    }
    if (!*more) return logs;
    if (record > kMaxWarmupRecords) {
      return resource_exhausted(path, " holds more than ", kMaxWarmupRecords,
                                " warm-up records (TF Serving's limit)");
    }
    PredictionLog log;
    if (!log.ParseFromString(bytes)) {
      return data_loss(path, ": warm-up record ", record, " (", bytes.size(),
                       " bytes) is no tensorflow.serving.PredictionLog");
    }
    IC_RETURN_IF_ERROR(check_kind(log, path, record));
    logs.push_back(std::move(log));
  }
}

}  // namespace ic
