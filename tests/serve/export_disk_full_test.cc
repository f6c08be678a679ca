// A disk that fills up while a new version is exported into the directory a live `serve`
// watches: the export fails naming the cause, leaves no version (and no temp-N) behind, and
// the server goes on answering every request with the previous version; once there is room
// again, the next export is picked up. The export directory is a small tmpfs (root only, as
// the CI machine runs; elsewhere the test says it is skipped).
#include <atomic>
#include <filesystem>
#include <thread>

#include "serve_test_util.h"
#include "tools/small_disk.h"

namespace ic {
namespace {

using namespace testing;
namespace fs = std::filesystem;

TEST(ServeExportDiskFull, AnExportThatFillsTheDiskLeavesThePreviousVersionServing) {
  TempDir dir;
  train_model(dir.sub("model"), 2);
  const std::string exports = dir.sub("export");
  SmallDisk disk(exports, 16);
  if (!disk.mounted()) GTEST_SKIP() << "skipped: cannot mount a tmpfs here (needs root)";
  const std::string first = export_once(dir.sub("model"), exports, "safetensors");
  ASSERT_FALSE(first.empty());

  ServerOptions options;
  options.model_dir = exports;
  options.max_batch_size = 2;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.poll_interval = std::chrono::milliseconds(100);
  RunningServer server(options);
  ASSERT_EQ(served_version(server), first);

  // Fill the disk, then give back 256 KiB: the next export starts and runs out part way.
  const std::string filler = exports + "/filler";
  ASSERT_NE(run_command("dd if=/dev/zero of=" + filler + " bs=64k 2>/dev/null").exit_code, 0);
  ASSERT_EQ(run_command("truncate -s -256K " + filler).exit_code, 0);

  const std::string body = json{{"instances", {b64_instance(test_image(5))}}}.dump();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, other_version{0}, failed{0};
  std::thread client([&] {
    while (!stop) {
      const Reply reply = post(server, "/v1/models/inception_v3:predict", body);
      if (reply.status != 200) {
        ++failed;
      } else {
        ++ok;
        if (served_version(server) != first) ++other_version;
      }
    }
  });
  const ToolOutput full =
      run_tool("export_model", "--model_dir=" + dir.sub("model") + " --export_dir=" + exports +
                                   " --format=safetensors");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // several of the watcher's polls
  stop = true;
  client.join();
  EXPECT_NE(full.exit_code, 0) << full.output;
  EXPECT_TRUE(full.contains("export to " + exports + " failed")) << full.output;
  EXPECT_TRUE(full.contains("No space left on device")) << full.output;
  EXPECT_EQ(entries(exports), (std::set<std::string>{first, "filler"}));
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(other_version.load(), 0);
  EXPECT_EQ(served_version(server), first);

  fs::remove(filler);
  const std::string second = export_once(dir.sub("model"), exports, "safetensors");
  ASSERT_FALSE(second.empty());
  std::string now;
  for (int i = 0; i < 100 && (now = served_version(server)) != second; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(now, second);
}

}  // namespace
}  // namespace ic
