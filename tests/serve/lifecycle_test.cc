// The server's life: a newer checkpoint is picked up during a stream of requests with none
// failing (and a broken one is refused while the old model keeps serving); SIGTERM to the
// serve program answers every request in flight and exits 0.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <regex>
#include <sstream>

#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

TEST(ServeReload, ANewCheckpointSwitchesTheVersionWithNoFailedRequest) {
  TempDir dir;
  const std::string model_dir = dir.sub("model");
  train_model(model_dir, 2);
  ServerOptions options;
  options.model_dir = model_dir;
  options.max_batch_size = 4;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.poll_interval = std::chrono::milliseconds(100);
  RunningServer server(options);
  ASSERT_EQ(served_version(server), "2");

  // Two clients post without pause while the trainer writes step 4 and the server reloads.
  std::atomic<bool> streaming{true};
  std::atomic<int> answered{0}, failed{0};
  std::mutex failure_mutex;
  std::string first_failure;
  const std::string body = json{{"instances", {b64_instance(test_image(5))}}}.dump();
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c) {
    clients.emplace_back([&] {
      while (streaming) {
        const Reply reply = post(server, "/v1/models/inception_v3:predict", body);
        if (reply.status == 200) {
          ++answered;
        } else {
          ++failed;
          std::lock_guard lock(failure_mutex);
          if (first_failure.empty())
            first_failure = std::to_string(reply.status) + " " + reply.body.dump();
        }
      }
    });
  }
  train_model(model_dir, 4);
  std::string version;
  for (int i = 0; i < 200 && version != "4"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    version = served_version(server);
  }
  const int answered_at_switch = answered;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  streaming = false;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(version, "4");
  EXPECT_EQ(failed, 0) << first_failure;
  EXPECT_GT(answered_at_switch, 0);
  EXPECT_GT(answered, answered_at_switch);  // requests were answered on both sides of the swap

  // A checkpoint that does not load is refused; version 4 goes on answering.
  std::ofstream(model_dir + "/model.ckpt-9.index") << "not a checkpoint index";
  std::ofstream(model_dir + "/model.ckpt-9.data-00000-of-00001") << "not tensor data";
  std::string checkpoint_file = read_text(model_dir + "/checkpoint");
  checkpoint_file =
      std::regex_replace(checkpoint_file, std::regex("model\\.ckpt-4"), "model.ckpt-9");
  std::ofstream(model_dir + "/checkpoint") << checkpoint_file;
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    metrics = http_get(server.port(), "/metrics").body;
    if (metrics.find("serve_model_loads_total{result=\"failed\"} 1") != std::string::npos) break;
  }
  EXPECT_NE(metrics.find("serve_model_loads_total{result=\"failed\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(served_version(server), "4");
  EXPECT_EQ(post(server, "/v1/models/inception_v3:predict", body).status, 200);
}

TEST(ServeProgram, SigtermAnswersEveryRequestInFlightAndExitsZero) {
  TempDir dir;
  train_model(dir.sub("model"), 2);
  // A batch would wait 20 s to fill: the requests are in flight, queued, when SIGTERM comes,
  // and shutting down runs them at once.
  ServeProcess serve(
      dir.sub("serve.log"),
      {"--model_dir=" + dir.sub("model"), "--port=0", "--rest_api_port=-1", "--num_threads=1",
       "--max_batch_size=8", "--batch_timeout_micros=20000000", "--batch_wait_when_idle=true"});
  const int port = serve.port();
  ASSERT_GT(port, 0) << read_text(dir.sub("serve.log"));
  constexpr int kRequests = 4;
  std::vector<int> statuses(kRequests, -1);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      const std::string body = json{{"instances", {b64_instance(test_image(i))}}}.dump();
      statuses[i] = http_post(port, "/v1/models/inception_v3:predict", body).status;
    });
  }
  // Wait until all of them are queued (/metrics says so).
  bool all_queued = false;
  for (int i = 0; i < 1000 && !all_queued; ++i) {
    const HttpAnswer metrics = http_get(port, "/metrics");
    all_queued = metrics.body.find("serve_queued_instances " + std::to_string(kRequests) + "\n") !=
                 std::string::npos;
    if (!all_queued) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(all_queued);
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(serve.terminate_and_wait(), 0) << read_text(dir.sub("serve.log"));
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(15));
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], 200) << "request " << i;
  const std::string log = read_text(dir.sub("serve.log"));
  EXPECT_NE(log.find("every request in flight was answered"), std::string::npos) << log;
  // Nothing listens any more.
  EXPECT_FALSE(http_get(port, "/healthz").answered());
}

}  // namespace
}  // namespace ic
