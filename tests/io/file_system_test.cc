// The file-system seam: scheme dispatch (no local folder named "gs:" ever), path helpers, and
// the local implementation's operations and buffered reads.
#include "io/file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "io/file_bytes.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ic_fs_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    old_cwd_ = fs::current_path();
    fs::current_path(dir_);  // a mistaken local "gs:" folder would appear here
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    fs::remove_all(dir_);
  }
  std::string dir_;
  fs::path old_cwd_;
};

TEST_F(FileSystemTest, SchemesPickTheImplementationAndUnknownOnesAreErrors) {
  Result<FileSystem*> local = file_system_for("/tmp/x");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(*local, &local_file_system());
  EXPECT_EQ(*file_system_for("relative/path"), &local_file_system());
  EXPECT_EQ(*file_system_for("file:///tmp/x"), &local_file_system());

  for (const std::string bad : {"s3://bucket/x", "http://host/x", "gcs://bucket/x"}) {
    Result<FileSystem*> fs_for = file_system_for(bad);
    ASSERT_FALSE(fs_for.ok()) << bad;
    EXPECT_NE(fs_for.status().message().find(bad), std::string::npos) << fs_for.status().message();
    EXPECT_NE(fs_for.status().message().find("unsupported"), std::string::npos);
  }
  for (const std::string typo : {"gs:/bucket/x", "gs:bucket/x"}) {
    Result<FileSystem*> fs_for = file_system_for(typo);
    ASSERT_FALSE(fs_for.ok()) << typo;
    EXPECT_NE(fs_for.status().message().find(typo), std::string::npos);
    EXPECT_NE(fs_for.status().message().find("malformed"), std::string::npos);
  }
  EXPECT_FALSE(file_system_for("gs://").ok());
  EXPECT_FALSE(file_system_for("gs:///object").ok());
}

TEST_F(FileSystemTest, WritingToATypoedUrlCreatesNoLocalFolder) {
  EXPECT_FALSE(make_dirs("gs:/bucket/model").ok());
  EXPECT_FALSE(write_file_atomically("gs:/bucket/model/checkpoint", {"x"}).ok());
  EXPECT_FALSE(make_dirs("s3://bucket/model").ok());
  EXPECT_FALSE(fs::exists("gs:"));
  EXPECT_FALSE(fs::exists("s3:"));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(FileSystemTest, PathHelpersKeepUrlsIntact) {
  EXPECT_EQ(join_path("gs://b/model", "checkpoint"), "gs://b/model/checkpoint");
  EXPECT_EQ(join_path("gs://b/model/", "eval"), "gs://b/model/eval");
  EXPECT_EQ(join_path("gs://b", "x"), "gs://b/x");
  EXPECT_EQ(join_path("/d", "/abs"), "/abs");
  EXPECT_EQ(join_path("/d", "gs://b/x"), "gs://b/x");
  EXPECT_EQ(join_path("", "x"), "x");
  EXPECT_EQ(parent_path("gs://b/model/ckpt"), "gs://b/model");
  EXPECT_EQ(parent_path("gs://b/x"), "gs://b");
  EXPECT_EQ(parent_path("/d/x"), "/d");
  EXPECT_EQ(parent_path("/x"), "/");
  EXPECT_EQ(parent_path("x"), ".");
  EXPECT_EQ(base_name("gs://b/model/model.ckpt-5.index"), "model.ckpt-5.index");
  EXPECT_EQ(base_name("/d/x/"), "x");
  EXPECT_TRUE(has_url_scheme("gs://b"));
  EXPECT_TRUE(has_url_scheme("gs:/b"));
  EXPECT_FALSE(has_url_scheme("/a:b"));
  EXPECT_FALSE(has_url_scheme("dir/gs://x"));
}

TEST_F(FileSystemTest, LocalOperations) {
  const std::string sub = join_path(dir_, "a/b");
  ASSERT_TRUE(make_dirs(sub).ok());
  EXPECT_TRUE(*path_is_directory(sub));
  const std::string file = join_path(sub, "f.bin");
  ASSERT_TRUE(write_file_atomically(file, {"hello ", "world"}).ok());
  EXPECT_EQ(*read_file_to_string(file, 100), "hello world");
  EXPECT_TRUE(*path_exists(file));
  EXPECT_FALSE(*path_is_directory(file));
  EXPECT_EQ(*local_file_system().file_size(file), 11u);
  Result<std::string> too_big = read_file_to_string(file, 5);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find(file), std::string::npos);

  ASSERT_TRUE(write_file_atomically(join_path(sub, "g.bin"), {"g"}).ok());
  EXPECT_EQ(*list_files(sub), (std::vector<std::string>{file, join_path(sub, "g.bin")}));
  EXPECT_EQ(*list_files(sub, "g"), (std::vector<std::string>{join_path(sub, "g.bin")}));
  std::vector<DirEntry> top = *local_file_system().list(join_path(dir_, "a"));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].name, "b");
  EXPECT_TRUE(top[0].is_directory);

  const std::string moved = join_path(sub, "h.bin");
  ASSERT_TRUE(rename_file(file, moved).ok());
  EXPECT_FALSE(*path_exists(file));
  EXPECT_EQ(*read_file_to_string(moved, 100), "hello world");
  ASSERT_TRUE(remove_file(moved).ok());
  EXPECT_FALSE(*path_exists(moved));
  EXPECT_TRUE(remove_file(moved).ok());  // missing is fine

  Result<std::string> missing = read_file_to_string(moved, 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(moved), std::string::npos);
  EXPECT_FALSE(list_files(join_path(dir_, "nope")).ok());
  // file:// names the same files.
  EXPECT_EQ(*read_file_to_string("file://" + join_path(sub, "g.bin"), 10), "g");
}

TEST_F(FileSystemTest, ExclusiveWriteRefusesAnExistingFile) {
  const std::string file = join_path(dir_, "events");
  {
    Result<std::unique_ptr<WritableFile>> w = local_file_system().open_write(file, true);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->append("abc").ok());
    ASSERT_TRUE((*w)->flush().ok());
    EXPECT_EQ(testing::read_file(file), "abc");  // visible after flush, before close
    ASSERT_TRUE((*w)->close().ok());
  }
  Result<std::unique_ptr<WritableFile>> again = local_file_system().open_write(file, true);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
}

TEST_F(FileSystemTest, CopyFileAndReadFileTail) {
  std::string bytes(9 << 20, '\0');  // more than one 8 MiB block
  std::mt19937 rng(4);
  for (char& c : bytes) c = static_cast<char>(rng());
  ASSERT_TRUE(write_file_atomically(dir_ + "/from", {bytes}).ok());
  ASSERT_TRUE(copy_file(dir_ + "/from", dir_ + "/to").ok());
  EXPECT_EQ(read_file_to_string(dir_ + "/to", 16 << 20).value(), bytes);
  EXPECT_EQ(read_file_tail(dir_ + "/to", 5).value(), bytes.substr(bytes.size() - 5));
  ASSERT_TRUE(write_file_atomically(dir_ + "/short", {"abc"}).ok());
  EXPECT_EQ(read_file_tail(dir_ + "/short", 100).value(), "abc");
  const Status missing = copy_file(dir_ + "/nothing", dir_ + "/to2");
  EXPECT_EQ(missing.code(), StatusCode::not_found) << missing.message();
  EXPECT_NE(missing.message().find(dir_ + "/nothing"), std::string::npos) << missing.message();
  EXPECT_FALSE(fs::exists(dir_ + "/to2"));
}

TEST_F(FileSystemTest, BufferedReaderReadsEveryByteAcrossBufferBoundaries) {
  std::string bytes(100000, '\0');
  std::mt19937 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  const std::string file = join_path(dir_, "data");
  testing::write_file(file, bytes);
  for (const bool read_ahead : {false, true}) {
    SCOPED_TRACE(read_ahead ? "with read-ahead" : "without read-ahead");
    BufferedReader reader(std::move(local_file_system().open_read(file)).value(), 4096, read_ahead);
    std::string got;
    std::uniform_int_distribution<size_t> chunk(1, 9000);  // smaller and larger than the buffer
    while (true) {
      std::string part(chunk(rng), '\0');
      const Result<size_t> n = reader.read(part.data(), part.size());
      ASSERT_TRUE(n.ok());
      got.append(part.data(), *n);
      if (*n < part.size()) break;
    }
    EXPECT_EQ(got, bytes);
    // Seeks anywhere (backwards, into the block read ahead, past it) read the right bytes.
    std::uniform_int_distribution<size_t> where(0, bytes.size() - 1);
    for (int i = 0; i < 200; ++i) {
      const size_t at = where(rng);
      const size_t len = std::min(chunk(rng), bytes.size() - at);
      std::string part(len, '\0');
      reader.seek(at);
      const Result<size_t> n = reader.read(part.data(), len);
      ASSERT_TRUE(n.ok());
      ASSERT_EQ(*n, len);
      ASSERT_EQ(part, bytes.substr(at, len)) << "at " << at;
    }
  }
}

}  // namespace
}  // namespace ic
