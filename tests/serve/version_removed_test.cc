// A served version's files removed while it is served (an operator cleaning up, a half-done
// rollback): requests in flight and new ones are answered by the model already in memory,
// and once the watcher sees the directory gone it falls back to the newest complete version.
#include <filesystem>

#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
namespace fs = std::filesystem;

TEST(ServeVersionRemoved, RequestsStillSucceedAndTheServerFallsBackToTheNewestCompleteVersion) {
  TempDir dir;
  train_model(dir.sub("model"), 2);
  const std::string exports = dir.sub("export");
  for (const char* version : {"1", "2"}) {
    const ToolOutput run =
        run_tool("export_model", "--model_dir=" + dir.sub("model") +
                                     " --export_dir=" + dir.sub("tmp") + " --format=safetensors");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    fs::create_directories(exports);
    for (const auto& made : fs::directory_iterator(dir.sub("tmp"))) {
      fs::rename(made.path(), fs::path(exports) / version);
    }
  }
  ServerOptions options;
  options.model_dir = exports;
  options.max_batch_size = 4;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.poll_interval = std::chrono::milliseconds(100);
  RunningServer server(options);
  ASSERT_EQ(served_version(server), "2");

  const std::string body = json{{"instances", {b64_instance(test_image(3))}}}.dump();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&] {
      while (!stop) {
        const Reply reply = post(server, "/v1/models/inception_v3:predict", body);
        (reply.status == 200 ? ok : failed)++;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  fs::remove_all(fs::path(exports) / "2");
  std::string now;
  for (int i = 0; i < 100 && (now = served_version(server)) != "1"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(now, "1");
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(failed.load(), 0);
}

}  // namespace
}  // namespace ic
