// copy_export_version on local directories: every file of the export, the extra files, the
// version appearing whole (through temp-<version>), and a failed copy leaving nothing behind.
// (On an object store the marker file goes last: tests/storage/run.sh, step 9.)
#include "io/export_versions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "io/file_system.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class CopyExportVersionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() / ("ic_export_versions_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/export/variables");
    write("export/saved_model.pb", "graph");
    write("export/variables/variables.index", "index");
    write("export/variables/variables.data-00000-of-00001", std::string(1000, 'w'));
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& bytes) {
    ASSERT_TRUE(write_file_atomically(dir_ + "/" + name, {bytes}).ok());
  }
  std::string read(const std::string& name) {
    Result<std::string> bytes = read_file_to_string(dir_ + "/" + name, 1 << 20);
    return bytes.ok() ? *bytes : "(" + bytes.status().message() + ")";
  }
  std::string dir_;
};

TEST_F(CopyExportVersionTest, CopiesEveryFileAndTheExtraFilesIntoTheVersion) {
  Result<std::string> copied = copy_export_version(dir_ + "/export", dir_ + "/serving", 7,
                                                   {{"assets.extra/record.json", "{}"}});
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_EQ(*copied, dir_ + "/serving/7");
  EXPECT_EQ(read("serving/7/saved_model.pb"), "graph");
  EXPECT_EQ(read("serving/7/variables/variables.index"), "index");
  EXPECT_EQ(read("serving/7/variables/variables.data-00000-of-00001"), std::string(1000, 'w'));
  EXPECT_EQ(read("serving/7/assets.extra/record.json"), "{}");
  EXPECT_FALSE(fs::exists(dir_ + "/serving/temp-7"));
  const auto versions = export_version_dirs(dir_ + "/serving");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ(versions->front().first, 7);
}

TEST_F(CopyExportVersionTest, AFailedCopyNamesTheSourceAndLeavesNoVersion) {
  fs::create_directories(dir_ + "/serving/temp-8");  // what a killed copy left: replaced
  write("serving/temp-8/stale", "x");
  Result<std::string> copied = copy_export_version(dir_ + "/missing", dir_ + "/serving", 8, {});
  ASSERT_FALSE(copied.ok());
  EXPECT_NE(copied.status().message().find(dir_ + "/missing"), std::string::npos)
      << copied.status().message();
  EXPECT_FALSE(fs::exists(dir_ + "/serving/8"));
  EXPECT_FALSE(fs::exists(dir_ + "/serving/temp-8"));
}

}  // namespace
}  // namespace ic
