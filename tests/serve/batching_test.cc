// Dynamic batching on the real server: concurrent requests are run together and get what each
// gets alone, and what classify() gives for the same image files; a full queue answers 503.
#include <atomic>
#include <fstream>
#include <regex>

#include "backend/backend.h"
#include "infer/classify.h"
#include "serve/api.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

// serve_batch_size_count in the /metrics text: the number of model runs so far.
int64_t batches_run(const RunningServer& server) {
  const HttpAnswer metrics = http_get(server.port(), "/metrics");
  if (!metrics.answered()) return -1;
  std::smatch match;
  static const std::regex kCount(R"(serve_batch_size_count (\d+))");
  if (!std::regex_search(metrics.body, match, kCount)) return -1;
  return std::stoll(match[1]);
}

// Waits (up to 10 s) until `count` instances are queued, as /metrics reports.
bool wait_for_queued(const RunningServer& server, int64_t count) {
  const std::string line = "serve_queued_instances " + std::to_string(count) + "\n";
  for (int i = 0; i < 1000; ++i) {
    const HttpAnswer metrics = http_get(server.port(), "/metrics");
    if (metrics.body.find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<double> probabilities(const Reply& reply) {
  std::vector<double> p;
  for (const json& v : reply.body["predictions"][0]["probabilities"]) p.push_back(v.get<double>());
  return p;
}

// A server's options over a freshly trained tiny model in `dir`: batches of up to
// `max_batch_size` that wait up to `batch_timeout` to fill.
ServerOptions batching_options(TempDir& dir, int64_t max_batch_size,
                               std::chrono::microseconds batch_timeout) {
  train_model(dir.sub("model"), 2);
  ServerOptions options;
  options.model_dir = dir.sub("model");
  options.max_batch_size = max_batch_size;
  options.batch_timeout = batch_timeout;
  return options;
}

TEST(ServeBatching, ConcurrentRequestsMatchSingleRequestsAndClassify) {
  TempDir dir;
  train_model(dir.sub("model"), 2);
  constexpr int kImages = 6;
  std::vector<std::string> jpegs, files;
  for (int i = 0; i < kImages; ++i) {
    jpegs.push_back(test_image(10 + i, 70 + 9 * i, 100 - 5 * i));
    files.push_back(dir.sub("image" + std::to_string(i) + ".jpg"));
    std::ofstream(files.back(), std::ios::binary) << jpegs.back();
  }

  // classify() on the same files: the reference answer.
  Result<std::unique_ptr<Backend>> backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  ClassifyOptions classify_options;
  classify_options.model_dir = dir.sub("model");
  classify_options.inputs = files;
  Result<ClassifyResult> classified = classify(classify_options, **backend);
  ASSERT_TRUE(classified.ok()) << classified.status().message();
  const int64_t classes = classified->logits_shape[1];
  ASSERT_EQ(classes, 11);

  // One server answers one image at a time (batches of 1, no waiting); the other waits up to
  // 10 s for a batch of all the images, which the concurrent clients fill at once.
  ServerOptions options;
  options.model_dir = dir.sub("model");
  // float32, as classify: auto would pick bf16 on a CPU that has it, and the comparison is of
  // batching, not of precisions (serve/precision_test.cc compares those).
  options.precision = ServePrecision::float32;
  options.max_batch_size = 1;
  RunningServer one_by_one(options);
  options.max_batch_size = kImages;
  options.batch_timeout = std::chrono::seconds(10);
  // Even while no other request is being prepared: the clients below start one by one.
  options.batch_wait_when_idle = true;
  RunningServer batching(options);
  const std::string path = "/v1/models/inception_v3:predict";
  std::vector<std::string> bodies;
  for (const std::string& jpeg : jpegs)
    bodies.push_back(json{{"instances", {b64_instance(jpeg)}}}.dump());

  std::vector<std::vector<double>> single(kImages);
  for (int i = 0; i < kImages; ++i) {
    const Reply reply = post(one_by_one, path, bodies[i]);
    ASSERT_EQ(reply.status, 200) << reply.body;
    single[i] = probabilities(reply);
  }
  EXPECT_EQ(batches_run(one_by_one), kImages);

  const auto start = std::chrono::steady_clock::now();
  std::vector<Reply> together(kImages);
  std::vector<std::thread> clients;
  for (int i = 0; i < kImages; ++i) {
    clients.emplace_back([&, i] { together[i] = post(batching, path, bodies[i]); });
  }
  for (std::thread& t : clients) t.join();
  // They were gathered into one model run, which started when the batch was full (not after
  // the 10 s timeout).
  EXPECT_EQ(batches_run(batching), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));

  for (int i = 0; i < kImages; ++i) {
    ASSERT_EQ(together[i].status, 200) << together[i].body;
    const std::vector<double> batched = probabilities(together[i]);
    const std::vector<float> reference = softmax(classified->logits.data() + i * classes, classes);
    ASSERT_EQ(batched.size(), static_cast<size_t>(classes));
    for (int64_t c = 0; c < classes; ++c) {
      EXPECT_NEAR(batched[c], single[i][c], 1e-5) << "image " << i << " class " << c;
      EXPECT_NEAR(batched[c], reference[c], 1e-5) << "image " << i << " class " << c;
    }
  }
  // Different images predict differently (the comparison above is not between constants).
  EXPECT_NE(single[0], single[1]);
}

// Nothing else is on its way, so a lone request runs at once instead of waiting 10 s for company
// (serve/batcher.h): REST and gRPC alike.
TEST(ServeBatching, ALoneRequestDoesNotWaitOutTheTimeout) {
  TempDir dir;
  RunningServer server(batching_options(dir, 4, std::chrono::seconds(10)));
  const std::string body = json{{"instances", {b64_instance(test_image(1))}}}.dump();
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const Reply reply = post(server, "/v1/models/inception_v3:predict", body);
    EXPECT_EQ(reply.status, 200) << reply.body;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  EXPECT_EQ(batches_run(server), 3);
}

TEST(ServeBatching, AFullQueueAnswersServiceUnavailable) {
  TempDir dir;
  // A batch waits 3 s to fill, alone too, so what is queued stays queued while we look.
  ServerOptions options = batching_options(dir, 4, std::chrono::seconds(3));
  options.batch_wait_when_idle = true;
  options.max_queue = 2;
  RunningServer server(options);
  const std::string path = "/v1/models/inception_v3:predict";
  const json one = {{"instances", {b64_instance(test_image(1))}}};

  // Two instances in one request never fit a queue of 2 next to a waiting one.
  std::vector<Reply> waiting(2);
  std::thread first([&] { waiting[0] = post(server, path, one.dump()); });
  EXPECT_TRUE(wait_for_queued(server, 1));
  const json three = {
      {"instances",
       {b64_instance(test_image(2)), b64_instance(test_image(3)), b64_instance(test_image(4))}}};
  const Reply never = post(server, path, three.dump());
  EXPECT_EQ(never.status, 503) << never.body;
  EXPECT_NE(error_of(never).find("can never fit"), std::string::npos) << never.body;
  const json two = {{"instances", {b64_instance(test_image(2)), b64_instance(test_image(3))}}};
  const Reply refused = post(server, path, two.dump());
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(error_of(refused).find("queue is full"), std::string::npos) << refused.body;
  std::thread second([&] { waiting[1] = post(server, path, one.dump()); });
  EXPECT_TRUE(wait_for_queued(server, 2));
  const Reply third = post(server, path, one.dump());  // the queue holds 2 now
  EXPECT_EQ(third.status, 503) << third.body;
  first.join();
  second.join();
  // What was queued is answered once the batch runs.
  EXPECT_EQ(waiting[0].status, 200) << waiting[0].body;
  EXPECT_EQ(waiting[1].status, 200) << waiting[1].body;
  // And the queue takes requests again.
  EXPECT_EQ(post(server, path, one.dump()).status, 200);
}

TEST(ServeBatching, ARequestNotAnsweredInTimeGetsServiceUnavailable) {
  TempDir dir;
  // A lone instance waits 5 s.
  ServerOptions options = batching_options(dir, 4, std::chrono::seconds(5));
  options.batch_wait_when_idle = true;
  options.request_timeout = std::chrono::milliseconds(300);
  RunningServer server(options);
  const auto start = std::chrono::steady_clock::now();
  const Reply late = post(server, "/v1/models/inception_v3:predict",
                          json{{"instances", {b64_instance(test_image(1))}}}.dump());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(late.status, 503) << late.body;
  EXPECT_NE(error_of(late).find("timed out"), std::string::npos) << late.body;
  EXPECT_LT(waited, std::chrono::seconds(4));  // answered before the batch would have run
}

}  // namespace
}  // namespace ic
