// The trainers' --export_best record (train/best_export.h, assets.extra/best_export.json in an
// export, read back when a run starts): the input is a whole record file. A parse either gives
// a record that keeps the promises the bar relies on (a metric, max or min, a finite value, a
// step >= 0) and that writes back to a record parsing to the same values, or an error that
// names the file.
#include <cmath>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "train/best_export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr char kSource[] = "export/7/assets.extra/best_export.json";
  const std::string text(ic::fuzz::as_view(data, size));
  ic::Result<ic::BestExportRecord> record = ic::parse_best_export_record(text, kSource);
  if (!record.ok()) {
    if (record.status().message().find(kSource) == std::string::npos) std::abort();
    return 0;
  }
  if (record->metric == ic::ExportBestMetric::none) std::abort();
  if (record->mode == ic::ExportBestMode::auto_) std::abort();
  if (!std::isfinite(record->value) || record->global_step < 0) std::abort();
  ic::Result<ic::BestExportRecord> again =
      ic::parse_best_export_record(ic::best_export_record_json(*record), kSource);
  if (!again.ok() || again->metric != record->metric || again->mode != record->mode ||
      again->value != record->value || again->global_step != record->global_step ||
      again->checkpoint != record->checkpoint)
    std::abort();
  return 0;
}
