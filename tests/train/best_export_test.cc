// --export_best's bookkeeping (train/best_export.h) with an exporter that writes only the
// record: an evaluation is exported only when it beats the best so far (max and min), the bar
// is read back from the export directory by a new exporter (a restarted run), old best
// exports beyond --exports_to_keep are removed and the best never is, and the record's parser
// refuses what it did not write. tests/tools/export_best_test.cc runs the real trainer.
#include "train/best_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/file_system.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// Writes each export as <export_dir>/<n>/ with only its extra files; counts what it did.
struct RecordingExporter {
  int64_t next_version = 100;
  int exports = 0;
  std::vector<std::string> removed;

  CheckpointExporter callbacks() {
    CheckpointExporter e;
    e.export_checkpoint = [this](const std::string&, const std::string&,
                                 const std::string& export_dir,
                                 const std::map<std::string, std::string>& extra) {
      const std::string dir = export_dir + "/" + std::to_string(next_version++);
      for (const auto& [name, contents] : extra) {
        fs::create_directories(fs::path(dir + "/" + name).parent_path());
        std::ofstream(dir + "/" + name) << contents;
      }
      ++exports;
      return Result<std::string>(dir);
    };
    e.remove_export = [this](const std::string& dir) {
      removed.push_back(dir);
      fs::remove_all(dir);
      return Status();
    };
    return e;
  }
};

EvaluationOutcome outcome(int64_t step, double accuracy, double loss) {
  return EvaluationOutcome{"/m/model.ckpt-" + std::to_string(step), step, accuracy, accuracy, loss};
}

std::unique_ptr<BestExporter> open_exporter(ExportBestMetric metric, int keep,
                                            const std::string& export_dir,
                                            RecordingExporter& recorder, std::ostream& log) {
  auto opened = BestExporter::open(metric, ExportBestMode::auto_, keep, "/m", export_dir,
                                   recorder.callbacks(), log);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  return opened.ok() ? std::move(*opened) : nullptr;
}

TEST(BestExport, ExportsOnlyWhenTheScoreImproves) {
  testing::TempDir dir;
  RecordingExporter recorder;
  std::ostringstream log;
  auto best = open_exporter(ExportBestMetric::accuracy, 0, dir.sub("export"), recorder, log);
  ASSERT_TRUE(best);
  for (const auto& [step, accuracy] : std::vector<std::pair<int, double>>{
           {2, 0.25}, {4, 0.5}, {6, 0.5}, {8, 0.375}, {10, 0.75}, {12, std::nan("")}}) {
    ASSERT_TRUE(best->consider(outcome(step, accuracy, 1.0)).ok());
  }
  EXPECT_EQ(recorder.exports, 3) << log.str();  // 0.25, 0.5, 0.75: a tie is no improvement
  ASSERT_TRUE(best->best());
  EXPECT_EQ(best->best()->second.value, 0.75);
  EXPECT_EQ(best->best()->second.global_step, 10);
  EXPECT_EQ(best->best()->second.checkpoint, "model.ckpt-10");
  EXPECT_NE(log.str().find("not better than"), std::string::npos) << log.str();
}

TEST(BestExport, LossIsBetterLower) {
  testing::TempDir dir;
  RecordingExporter recorder;
  std::ostringstream log;
  auto best = open_exporter(ExportBestMetric::loss, 0, dir.sub("export"), recorder, log);
  ASSERT_TRUE(best);
  for (double loss : {2.0, 2.5, 1.5, 1.75}) ASSERT_TRUE(best->consider(outcome(1, 0, loss)).ok());
  EXPECT_EQ(recorder.exports, 2);
  EXPECT_EQ(best->best()->second.value, 1.5);
  EXPECT_EQ(best->best()->second.mode, ExportBestMode::min);
}

TEST(BestExport, ARestartedRunReadsTheBarFromTheExports) {
  testing::TempDir dir;
  const std::string export_dir = dir.sub("export");
  RecordingExporter recorder;
  std::ostringstream log;
  {
    auto first = open_exporter(ExportBestMetric::accuracy, 0, export_dir, recorder, log);
    ASSERT_TRUE(first->consider(outcome(2, 0.1 + 0.2, 1)).ok());  // an inexact double
  }
  ASSERT_EQ(recorder.exports, 1);
  auto second = open_exporter(ExportBestMetric::accuracy, 0, export_dir, recorder, log);
  ASSERT_TRUE(second->best());
  EXPECT_EQ(second->best()->second.value, 0.1 + 0.2);      // read back exactly
  ASSERT_TRUE(second->consider(outcome(4, 0.3, 1)).ok());  // 0.3 < 0.1 + 0.2
  EXPECT_EQ(recorder.exports, 1) << log.str();
  ASSERT_TRUE(second->consider(outcome(6, 0.31, 1)).ok());
  EXPECT_EQ(recorder.exports, 2);
  // Another metric's exports are neither a bar nor pruned.
  auto loss = open_exporter(ExportBestMetric::loss, 1, export_dir, recorder, log);
  EXPECT_FALSE(loss->best());
  EXPECT_NE(log.str().find("exported for accuracy (max), not loss (min)"), std::string::npos)
      << log.str();
}

TEST(BestExport, KeepsTheNewestExportsAndNeverTheBestGoes) {
  testing::TempDir dir;
  const std::string export_dir = dir.sub("export");
  RecordingExporter recorder;
  std::ostringstream log;
  auto best = open_exporter(ExportBestMetric::accuracy, 2, export_dir, recorder, log);
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(best->consider(outcome(i, 0.1 * i, 1)).ok());
  EXPECT_EQ(recorder.exports, 5);
  EXPECT_EQ(recorder.removed.size(), 3u);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(export_dir)) left.push_back(entry.path());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{export_dir + "/103", export_dir + "/104"}));
  // A restart with a smaller keep prunes at its next export, the best kept.
  auto restarted = open_exporter(ExportBestMetric::accuracy, 1, export_dir, recorder, log);
  ASSERT_TRUE(restarted->consider(outcome(6, 0.9, 1)).ok());
  EXPECT_FALSE(fs::exists(export_dir + "/103"));
  EXPECT_FALSE(fs::exists(export_dir + "/104"));
  EXPECT_TRUE(fs::exists(export_dir + "/105/" + kBestExportRecord));
}

TEST(BestExport, AnUnreadableRecordIsNamedAndLeftOut) {
  testing::TempDir dir;
  const std::string export_dir = dir.sub("export");
  fs::create_directories(export_dir + "/7/assets.extra");
  std::ofstream(export_dir + "/7/" + kBestExportRecord) << "{\"metric\": \"accuracy\"";
  RecordingExporter recorder;
  std::ostringstream log;
  auto best = open_exporter(ExportBestMetric::accuracy, 0, export_dir, recorder, log);
  EXPECT_FALSE(best->best());
  EXPECT_NE(log.str().find("ignoring " + export_dir + "/7"), std::string::npos) << log.str();
}

TEST(BestExport, TheRecordParsesBackAndRefusesWhatItDidNotWrite) {
  const BestExportRecord r{ExportBestMetric::accuracy_at_5, ExportBestMode::max, 0.625, 1200,
                           "model.ckpt-1200"};
  Result<BestExportRecord> back = parse_best_export_record(best_export_record_json(r), "p");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metric, r.metric);
  EXPECT_EQ(back->mode, r.mode);
  EXPECT_EQ(back->value, r.value);
  EXPECT_EQ(back->global_step, r.global_step);
  EXPECT_EQ(back->checkpoint, r.checkpoint);
  const char* bad[] = {
      "[]",
      "{\"metric\": \"none\", \"mode\": \"max\", \"value\": 1, \"global_step\": 1, "
      "\"checkpoint\": \"c\"}",
      "{\"metric\": \"accuracy\", \"mode\": \"auto\", \"value\": 1, \"global_step\": 1, "
      "\"checkpoint\": \"c\"}",
      "{\"metric\": \"accuracy\", \"mode\": \"max\", \"value\": 1e999, \"global_step\": 1, "
      "\"checkpoint\": \"c\"}",
      "{\"metric\": \"accuracy\", \"mode\": \"max\", \"value\": 1, \"global_step\": -1, "
      "\"checkpoint\": \"c\"}",
      "{\"metric\": \"accuracy\", \"mode\": \"max\", \"value\": 1, \"global_step\": 1}",
  };
  for (const char* text : bad) {
    Result<BestExportRecord> parsed = parse_best_export_record(text, "/x/best_export.json");
    EXPECT_FALSE(parsed.ok()) << text;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find("/x/best_export.json"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ic
