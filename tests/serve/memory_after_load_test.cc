// A burst of large requests must not leave serve's resident memory high once it is idle
// again: the real program, 12 concurrent 8 MB predicts, then an idle second; its RSS must come
// back to within 100 MB of what it was before the burst (glibc keeps freed memory in its
// per-thread arenas unless it is given back). Skipped under AddressSanitizer, whose allocator
// is not glibc's.
#include <fstream>
#include <sstream>

#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

// VmRSS of `pid` in MiB (-1 when unreadable).
double rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

// `count` preprocessed 75x75x3 instances as float text: about 100 KB of JSON each.
std::string float_instances_body(int count) {
  std::ostringstream body;
  body << "{\"instances\": [";
  for (int i = 0; i < count; ++i) {
    body << (i ? ",[" : "[");
    for (int y = 0; y < 75; ++y) {
      body << (y ? ",[" : "[");
      for (int x = 0; x < 75; ++x) body << (x ? "," : "") << "[0.125,-0.25,0.5]";
      body << "]";
    }
    body << "]";
  }
  body << "]}";
  return body.str();
}

TEST(ServeMemory, AnIdleServerGivesBackWhatABurstOfLargeRequestsTook) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator holds freed memory in its quarantine";
#endif
  TempDir dir;
  train_model(dir.sub("model"), 2);
  ServeProcess serve(dir.sub("serve.log"),
                     {"--model_dir=" + dir.sub("model"), "--port=0", "--rest_api_port=-1",
                      "--num_threads=1", "--max_body_bytes=16000000"});
  const int port = serve.port();
  ASSERT_GT(port, 0) << read_text(dir.sub("serve.log"));
  ASSERT_EQ(http_get(port, "/healthz").status, 200);
  const double before = rss_mib(serve.pid());
  ASSERT_GT(before, 0);

  const std::string text = float_instances_body(80);  // about 8 MB
  double peak = before;
  std::vector<std::thread> clients;
  std::vector<int> statuses(12, -1);
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back(
        [&, i] { statuses[i] = http_post(port, "/v1/models/inception_v3:predict", text).status; });
  }
  for (int i = 0; i < 200; ++i) {  // while they run
    peak = std::max(peak, rss_mib(serve.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::thread& t : clients) t.join();
  for (int s : statuses) EXPECT_TRUE(s == 200 || s == 503) << s;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // idle
  const double after = rss_mib(serve.pid());
  std::cout << "serve RSS: " << before << " MiB before, " << peak << " MiB at the peak, " << after
            << " MiB idle after\n";
  EXPECT_GT(peak, before + 150) << "the burst was too small to tell";
  EXPECT_LT(after, before + 100);
}

}  // namespace
}  // namespace ic

namespace ic {
namespace {

using namespace testing;

// The address space (VmSize) of serve started with `flags`, once it listens; 0 if it never does.
uint64_t address_space_once_listening(const std::vector<std::string>& flags,
                                      const std::string& log) {
  ServeProcess probe(log, flags);
  if (probe.port() <= 0) return 0;
  std::ifstream status("/proc/" + std::to_string(probe.pid()) + "/status");
  uint64_t kib = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) kib = std::stoull(line.substr(7));
  }
  probe.terminate_and_wait();
  return kib * 1024;
}

// A flood of the largest bodies the limits allow, from more clients than there are threads,
// to the real program under an address-space limit 1.5 GB above its start-up size: every
// answer is 200, 413 or 503, none fails for memory, and the server is still there after.
TEST(ServeMemory, AFloodOfTheLargestRequestsIsRefusedNotOutOfMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space; RLIMIT_AS cannot apply";
#endif
  TempDir dir;
  train_model(dir.sub("model"), 2);
  const std::vector<std::string> flags = {"--model_dir=" + dir.sub("model"),
                                          "--port=0",
                                          "--rest_api_port=-1",
                                          "--num_threads=1",
                                          "--max_body_bytes=8500000",
                                          "--max_inflight_bytes=64000000"};
  // The start-up size depends on the machine (threads, malloc's arenas, and --precision=auto,
  // which times two graphs where the CPU has bf16): measured first, without a limit.
  const uint64_t start_up = address_space_once_listening(flags, dir.sub("probe.log"));
  ASSERT_GT(start_up, 0u) << read_text(dir.sub("probe.log"));
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  std::cout << "start-up address space " << (start_up >> 20) << " MiB; limit 1.5 GiB above\n";
  ServeProcess serve(dir.sub("serve.log"), flags,
                     /*address_space_bytes=*/start_up + 3 * kGiB / 2);
  const int port = serve.port();
  ASSERT_GT(port, 0) << read_text(dir.sub("serve.log"));
  const std::string text = float_instances_body(80);
  std::vector<std::thread> clients;
  std::vector<int> statuses(48, -1);
  for (size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back(
        [&, i] { statuses[i] = http_post(port, "/v1/models/inception_v3:predict", text).status; });
  }
  for (std::thread& t : clients) t.join();
  int answered = 0, refused = 0;
  for (int s : statuses) {
    EXPECT_TRUE(s == 200 || s == 413 || s == 503) << s << "\n" << read_text(dir.sub("serve.log"));
    answered += s == 200;
    refused += s == 503;
  }
  std::cout << "flood: " << answered << " answered, " << refused << " refused with 503\n";
  EXPECT_GT(answered, 0);
  EXPECT_EQ(http_get(port, "/healthz").status, 200);
  EXPECT_EQ(serve.terminate_and_wait(), 0) << read_text(dir.sub("serve.log"));
}

}  // namespace
}  // namespace ic
