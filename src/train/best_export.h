// --export_best: TensorFlow's BestExporter for the trainers. After each evaluation, the
// checkpoint evaluated is exported under --export_dir only when its score beats every earlier
// best export's there. Each such export carries its score in assets.extra/best_export.json, so
// the bar is read back from the export directory itself: a restarted run (or another process
// exporting to the same place) never exports a worse model over a better one, and `serve`
// watching export_dir always serves the best model so far (its newest version).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/choices.h"
#include "train/run_loop.h"

namespace ic {

// What the trainers' exports need from infer/ (the programs pass infer/model_export.h's
// functions; train/ cannot use infer/ itself).
struct CheckpointExporter {
  // Exports `checkpoint` (a checkpoint of model_dir) as a SavedModel into a new numbered
  // directory under export_dir, with `extra_files` (paths inside it → contents) written before
  // the model's own files, and returns that directory's path.
  std::function<Result<std::string>(const std::string& model_dir, const std::string& checkpoint,
                                    const std::string& export_dir,
                                    const std::map<std::string, std::string>& extra_files)>
      export_checkpoint;
  // Deletes an export directory so that no poller ever sees it half deleted.
  std::function<Status(const std::string& dir)> remove_export;
};

// Where each best export keeps its score, inside the export's directory.
inline constexpr const char* kBestExportRecord = "assets.extra/best_export.json";

// One best export's record: what it scored, on which metric, at which step.
struct BestExportRecord {
  ExportBestMetric metric = ExportBestMetric::accuracy;
  ExportBestMode mode = ExportBestMode::max;  // max or min, never auto
  double value = 0;                           // finite
  int64_t global_step = 0;
  std::string checkpoint;  // the checkpoint's file name in the model_dir it came from
};

std::string best_export_record_json(const BestExportRecord& record);
// The record in `text`, read from `path` (named in the errors); refuses anything but what
// best_export_record_json writes: another metric name, a non-finite value, a missing field.
Result<BestExportRecord> parse_best_export_record(const std::string& text, const std::string& path);

// auto → min for loss, max for the accuracies.
ExportBestMode resolved_mode(ExportBestMetric metric, ExportBestMode mode);

// The best exports of `metric` under export_dir (none when it does not exist), oldest first,
// and the best of them. `mode` is resolved (max or min). A record that cannot be read, or
// one of another metric or mode, is named in `log` and left out.
struct BestExports {
  std::vector<std::string> dirs;
  std::optional<std::pair<std::string, BestExportRecord>> best;  // its directory and record
};
Result<BestExports> read_best_exports(const std::string& export_dir, ExportBestMetric metric,
                                      ExportBestMode mode, std::ostream& log);

class BestExporter {
 public:
  // Reads the records of the best exports already in export_dir (none when it does not
  // exist); a record that cannot be read is named in `log` and left out.
  static Result<std::unique_ptr<BestExporter>> open(ExportBestMetric metric, ExportBestMode mode,
                                                    int32_t exports_to_keep,
                                                    const std::string& model_dir,
                                                    const std::string& export_dir,
                                                    CheckpointExporter exporter, std::ostream& log);

  // Exports outcome.checkpoint when its score is better than the best so far (a score that is
  // not a number never is), then deletes the oldest best exports beyond exports_to_keep.
  Status consider(const EvaluationOutcome& outcome);

  // The best export so far: its directory and record.
  const std::optional<std::pair<std::string, BestExportRecord>>& best() const { return best_; }

  // Use open(), which also reads the earlier exports.
  BestExporter(ExportBestMetric metric, ExportBestMode mode, int32_t keep, std::string model_dir,
               std::string export_dir, CheckpointExporter exporter, std::ostream& log);

 private:
  Status prune();

  ExportBestMetric metric_;
  ExportBestMode mode_;
  int32_t keep_;
  std::string model_dir_, export_dir_;
  CheckpointExporter exporter_;
  std::ostream& log_;
  std::optional<std::pair<std::string, BestExportRecord>> best_;
  std::vector<std::string> exports_;  // this metric's best exports, oldest first
};

}  // namespace ic
