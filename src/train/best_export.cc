#include "train/best_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "io/export_versions.h"
#include "io/file_system.h"
#include "io/json.h"

namespace ic {
namespace {

constexpr uint64_t kMaxRecordBytes = 64 << 10;

double score_of(const EvaluationOutcome& outcome, ExportBestMetric metric) {
  switch (metric) {
    case ExportBestMetric::accuracy: return outcome.accuracy;
    case ExportBestMetric::accuracy_at_5: return outcome.accuracy_at_5;
    case ExportBestMetric::loss: return outcome.loss;
    case ExportBestMetric::none: break;
  }
  return std::nan("");
}

bool better(double value, double than, ExportBestMode mode) {
  return mode == ExportBestMode::min ? value < than : value > than;
}

std::string describe(const BestExportRecord& r) {
  return std::string(choice_name(r.metric)) + " = " + json_number(r.value) + " at step " +
         std::to_string(r.global_step);
}

}  // namespace

ExportBestMode resolved_mode(ExportBestMetric metric, ExportBestMode mode) {
  if (mode != ExportBestMode::auto_) return mode;
  return metric == ExportBestMetric::loss ? ExportBestMode::min : ExportBestMode::max;
}

std::string best_export_record_json(const BestExportRecord& r) {
  return "{\"metric\": " + json_quote(choice_name(r.metric)) +
         ", \"mode\": " + json_quote(choice_name(r.mode)) + ", \"value\": " + json_number(r.value) +
         ", \"global_step\": " + std::to_string(r.global_step) +
         ", \"checkpoint\": " + json_quote(r.checkpoint) + "}\n";
}

Result<BestExportRecord> parse_best_export_record(const std::string& text,
                                                  const std::string& path) {
  Result<JsonValue> parsed = parse_json(text);
  if (!parsed.ok()) return parsed.status().with_context(path);
  const JsonValue& root = *parsed;
  if (root.kind != JsonValue::Kind::object) return data_loss(path, ": not a JSON object");
  auto field = [&](const char* name, JsonValue::Kind kind) -> Result<const JsonValue*> {
    const JsonValue* v = root.find(name);
    if (v == nullptr || v->kind != kind)
      return data_loss(path, ": no \"", name, "\" of the right type");
    return v;
  };
  BestExportRecord r;
  IC_ASSIGN_OR_RETURN(const JsonValue* metric, field("metric", JsonValue::Kind::string));
  std::optional<ExportBestMetric> m = parse_choice<ExportBestMetric>(metric->text);
  if (!m || *m == ExportBestMetric::none)
    return data_loss(path, ": unknown metric \"", metric->text, "\"");
  r.metric = *m;
  IC_ASSIGN_OR_RETURN(const JsonValue* mode, field("mode", JsonValue::Kind::string));
  std::optional<ExportBestMode> mo = parse_choice<ExportBestMode>(mode->text);
  if (!mo || *mo == ExportBestMode::auto_)
    return data_loss(path, ": mode must be max or min, not \"", mode->text, "\"");
  r.mode = *mo;
  IC_ASSIGN_OR_RETURN(const JsonValue* value, field("value", JsonValue::Kind::number));
  const char* begin = value->text.data();
  const char* end = begin + value->text.size();
  const auto read = std::from_chars(begin, end, r.value);
  if (read.ec != std::errc() || read.ptr != end || !std::isfinite(r.value))
    return data_loss(path, ": value ", value->text, " is not a finite number");
  IC_ASSIGN_OR_RETURN(const JsonValue* step, field("global_step", JsonValue::Kind::number));
  if (!step->as_int64() || *step->as_int64() < 0)
    return data_loss(path, ": global_step ", step->text, " is not a step");
  r.global_step = *step->as_int64();
  IC_ASSIGN_OR_RETURN(const JsonValue* checkpoint, field("checkpoint", JsonValue::Kind::string));
  r.checkpoint = checkpoint->text;
  return r;
}

BestExporter::BestExporter(ExportBestMetric metric, ExportBestMode mode, int32_t keep,
                           std::string model_dir, std::string export_dir,
                           CheckpointExporter exporter, std::ostream& log)
    : metric_(metric),
      mode_(resolved_mode(metric, mode)),
      keep_(keep),
      model_dir_(std::move(model_dir)),
      export_dir_(std::move(export_dir)),
      exporter_(std::move(exporter)),
      log_(log) {}

Result<BestExports> read_best_exports(const std::string& export_dir, ExportBestMetric metric,
                                      ExportBestMode mode, std::ostream& log) {
  BestExports found;
  IC_ASSIGN_OR_RETURN(auto versions, export_version_dirs(export_dir));
  std::reverse(versions.begin(), versions.end());  // oldest first
  for (const auto& [version, dir] : versions) {
    const std::string path = join_path(dir, kBestExportRecord);
    IC_ASSIGN_OR_RETURN(bool has_record, path_exists(path));
    if (!has_record) continue;  // an export of something else: neither a bar nor pruned
    Result<BestExportRecord> record = [&]() -> Result<BestExportRecord> {
      IC_ASSIGN_OR_RETURN(std::string text, read_file_to_string(path, kMaxRecordBytes));
      return parse_best_export_record(text, path);
    }();
    if (!record.ok()) {
      log << "--export_best: ignoring " << dir << ": " << record.status().message() << std::endl;
      continue;
    }
    if (record->metric != metric || record->mode != mode) {
      log << "--export_best: ignoring " << dir << ", exported for " << choice_name(record->metric)
          << " (" << choice_name(record->mode) << "), not " << choice_name(metric) << " ("
          << choice_name(mode) << ")" << std::endl;
      continue;
    }
    found.dirs.push_back(dir);
    if (!found.best || better(record->value, found.best->second.value, mode))
      found.best = std::make_pair(dir, *record);
  }
  return found;
}

Result<std::unique_ptr<BestExporter>> BestExporter::open(
    ExportBestMetric metric, ExportBestMode mode, int32_t exports_to_keep,
    const std::string& model_dir, const std::string& export_dir, CheckpointExporter exporter,
    std::ostream& log) {
  if (!exporter.export_checkpoint || !exporter.remove_export)
    return error("--export_best: this program was built without the export");
  auto best = std::make_unique<BestExporter>(metric, mode, exports_to_keep, model_dir, export_dir,
                                             std::move(exporter), log);
  IC_ASSIGN_OR_RETURN(BestExports found, read_best_exports(export_dir, metric, best->mode_, log));
  best->exports_ = std::move(found.dirs);
  best->best_ = std::move(found.best);
  if (best->best_) {
    log << "--export_best: the best export so far is " << best->best_->first << " ("
        << describe(best->best_->second) << ")" << std::endl;
  }
  return best;
}

Status BestExporter::consider(const EvaluationOutcome& outcome) {
  const double value = score_of(outcome, metric_);
  const std::string name = choice_name(metric_);
  if (!std::isfinite(value)) {
    log_ << "--export_best: not exported: " << name << " at step " << outcome.step << " is "
         << value << std::endl;
    return Status();
  }
  if (best_ && !better(value, best_->second.value, mode_)) {
    log_ << "--export_best: not exported: " << name << " = " << json_number(value) << " at step "
         << outcome.step << " is not better than " << best_->first << "'s "
         << describe(best_->second) << std::endl;
    return Status();
  }
  BestExportRecord record{metric_, mode_, value, outcome.step, base_name(outcome.checkpoint)};
  IC_ASSIGN_OR_RETURN(std::string dir, exporter_.export_checkpoint(
                                           model_dir_, outcome.checkpoint, export_dir_,
                                           {{kBestExportRecord, best_export_record_json(record)}}));
  log_ << "--export_best: exported " << outcome.checkpoint << " to " << dir << " (" << name << " = "
       << json_number(value);
  if (best_) log_ << ", better than " << json_number(best_->second.value);
  log_ << ")" << std::endl;
  best_ = std::make_pair(dir, record);
  exports_.push_back(dir);
  return prune();
}

Status BestExporter::prune() {
  if (keep_ <= 0) return Status();
  while (exports_.size() > static_cast<size_t>(keep_)) {
    const std::string oldest = exports_.front();
    exports_.erase(exports_.begin());
    if (best_ && oldest == best_->first) continue;  // never the best one
    // A failed deletion is not worth the run: it is said, and training goes on.
    Status removed = exporter_.remove_export(oldest);
    if (removed.ok()) {
      log_ << "--export_best: removed " << oldest << " (--exports_to_keep=" << keep_ << ")"
           << std::endl;
    } else {
      log_ << "--export_best: could not remove " << oldest << ": " << removed.message()
           << std::endl;
    }
  }
  return Status();
}

}  // namespace ic
