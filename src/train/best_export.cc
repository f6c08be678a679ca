#include "train/best_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

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

// The shortest text that reads back as the same double, so a bar read from a record equals
// the score that was written.
std::string exact_number(double value) {
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, value);
  return std::string(text, written.ptr);
}

// "1796180561" → 1796180561; anything but a plain version number → nullopt.
std::optional<int64_t> version_number(const std::string& name) {
  if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::strtoll(name.c_str(), nullptr, 10);
}

std::string describe(const BestExportRecord& r) {
  return std::string(choice_name(r.metric)) + " = " + exact_number(r.value) + " at step " +
         std::to_string(r.global_step);
}

}  // namespace

ExportBestMode resolved_mode(ExportBestMetric metric, ExportBestMode mode) {
  if (mode != ExportBestMode::auto_) return mode;
  return metric == ExportBestMetric::loss ? ExportBestMode::min : ExportBestMode::max;
}

std::string best_export_record_json(const BestExportRecord& r) {
  return "{\"metric\": " + json_quote(choice_name(r.metric)) +
         ", \"mode\": " + json_quote(choice_name(r.mode)) +
         ", \"value\": " + exact_number(r.value) +
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

Result<std::unique_ptr<BestExporter>> BestExporter::open(
    ExportBestMetric metric, ExportBestMode mode, int32_t exports_to_keep,
    const std::string& model_dir, const std::string& export_dir, CheckpointExporter exporter,
    std::ostream& log) {
  if (!exporter.export_checkpoint || !exporter.remove_export)
    return error("--export_best: this program was built without the export");
  auto best = std::make_unique<BestExporter>(metric, mode, exports_to_keep, model_dir, export_dir,
                                             std::move(exporter), log);
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(export_dir));
  IC_ASSIGN_OR_RETURN(bool exists, fs->exists(export_dir));
  if (!exists) return best;
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->list(export_dir));
  for (const DirEntry& entry : entries) {
    const std::optional<int64_t> version = version_number(entry.name);
    if (!entry.is_directory || !version) continue;
    const std::string dir = join_path(export_dir, entry.name);
    const std::string path = join_path(dir, kBestExportRecord);
    IC_ASSIGN_OR_RETURN(bool has_record, fs->exists(path));
    if (!has_record) continue;  // an export of something else: neither a bar nor pruned
    Result<BestExportRecord> record = [&]() -> Result<BestExportRecord> {
      IC_ASSIGN_OR_RETURN(std::string text, read_file_to_string(path, kMaxRecordBytes));
      return parse_best_export_record(text, path);
    }();
    if (!record.ok()) {
      log << "--export_best: ignoring " << dir << ": " << record.status().message() << std::endl;
      continue;
    }
    if (record->metric != metric || record->mode != best->mode_) {
      log << "--export_best: ignoring " << dir << ", exported for " << choice_name(record->metric)
          << " (" << choice_name(record->mode) << "), not " << choice_name(metric) << " ("
          << choice_name(best->mode_) << ")" << std::endl;
      continue;
    }
    best->exports_.push_back(Export{*version, dir});
    if (!best->best_ || better(record->value, best->best_->second.value, best->mode_))
      best->best_ = std::make_pair(dir, *record);
  }
  std::sort(best->exports_.begin(), best->exports_.end(),
            [](const Export& a, const Export& b) { return a.version < b.version; });
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
    log_ << "--export_best: not exported: " << name << " = " << exact_number(value) << " at step "
         << outcome.step << " is not better than " << best_->first << "'s "
         << describe(best_->second) << std::endl;
    return Status();
  }
  BestExportRecord record{metric_, mode_, value, outcome.step, base_name(outcome.checkpoint)};
  IC_ASSIGN_OR_RETURN(std::string dir, exporter_.export_checkpoint(
                                           model_dir_, outcome.checkpoint, export_dir_,
                                           {{kBestExportRecord, best_export_record_json(record)}}));
  log_ << "--export_best: exported " << outcome.checkpoint << " to " << dir << " (" << name << " = "
       << exact_number(value);
  if (best_) log_ << ", better than " << exact_number(best_->second.value);
  log_ << ")" << std::endl;
  best_ = std::make_pair(dir, record);
  exports_.push_back(Export{version_number(base_name(dir)).value_or(0), dir});
  return prune();
}

Status BestExporter::prune() {
  if (keep_ <= 0) return Status();
  while (exports_.size() > static_cast<size_t>(keep_)) {
    const Export oldest = exports_.front();
    exports_.erase(exports_.begin());
    if (best_ && oldest.dir == best_->first) continue;  // never the best one
    // A failed deletion is not worth the run: it is said, and training goes on.
    Status removed = exporter_.remove_export(oldest.dir);
    if (removed.ok()) {
      log_ << "--export_best: removed " << oldest.dir << " (--exports_to_keep=" << keep_ << ")"
           << std::endl;
    } else {
      log_ << "--export_best: could not remove " << oldest.dir << ": " << removed.message()
           << std::endl;
    }
  }
  return Status();
}

}  // namespace ic
