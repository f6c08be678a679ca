// The real serve program against hostile and careless HTTP clients on loopback (bounded
// loops, every wait has a deadline): a thousand slow connections, strict framing, refusals
// that come at once, pipelining, half-close, Range, a burst of new connections, SIGHUP, and
// a drain that answers what was sent before SIGTERM.
#include <sys/resource.h>

#include "http/raw_client_test_util.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
using namespace std::chrono_literals;
using http::testing::RawAnswer;
using http::testing::RawClient;

class HostileClients : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The test holds a thousand client sockets besides the server's.
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    dir_ = new TempDir();  // lives for the suite; the model is trained once
    train_model(dir_->sub("model"), 2);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    // A log of its own per test: a port read from an earlier test's log would be stale.
    log_ = dir_->sub(std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                     ".log");
    serve_ = std::make_unique<ServeProcess>(
        log_, std::vector<std::string>{"--model_dir=" + dir_->sub("model"), "--port=0",
                                       "--rest_api_port=-1", "--num_threads=1", "--http_threads=4",
                                       "--header_timeout_ms=3000", "--max_body_bytes=1000000"});
    port_ = serve_->port();
    ASSERT_GT(port_, 0) << read_text(log_);
  }
  void TearDown() override {
    if (!terminated_) {
      EXPECT_EQ(serve_->terminate_and_wait(), 0) << read_text(log_);
    }
  }

  std::string predict_request() const {
    const std::string body = json{{"instances", {b64_instance(test_image(1))}}}.dump();
    return "POST /v1/models/inception_v3:predict HTTP/1.1\r\nHost: a\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  static TempDir* dir_;
  std::unique_ptr<ServeProcess> serve_;
  std::string log_;
  int port_ = 0;
  bool terminated_ = false;
};
TempDir* HostileClients::dir_ = nullptr;

TEST_F(HostileClients, APredictIsAnsweredWithinASecondWhileAThousandSlowClientsTrickle) {
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 1000; ++i) {
    slow.push_back(std::make_unique<RawClient>(port_));
    ASSERT_TRUE(slow.back()->connected()) << i;
    slow.back()->send("GET /healthz HTTP/1.1\r\nX-Slow: ");
  }
  for (auto& s : slow) s->send("a");
  RawClient client(port_);
  ASSERT_TRUE(client.send(predict_request()));
  const auto start = std::chrono::steady_clock::now();
  const RawAnswer answer = client.read_answer(5s);
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  // At --header_timeout_ms the slow ones are cut with 408.
  EXPECT_EQ(slow[0]->read_answer(10s).status, 408);
}

TEST_F(HostileClients, AmbiguousFramingIsRefusedAtOnce) {
  const std::string post = "POST /v1/models/inception_v3:predict HTTP/1.1\r\nHost: a\r\n";
  struct Case {
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /healthz HTTP/1.1\r\nHost: a\r\nNoColonHere\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nHost : a\r\n\r\n", 400},
      {post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {post + "Content-Length: 1,2\r\n\r\n", 400},
      {post + "Content-Length: +5\r\n\r\n", 400},
      {post + "Content-Length: -1\r\n\r\n", 400},
      {post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {post + "\r\n", 411},
      {post + "Content-Length: 2000000\r\nExpect: 100-continue\r\n\r\n", 413},
      {post + "Content-Length: 2000000\r\n\r\n", 413},
      {"GET /healthz HTTP/1.1\r\nHost: a\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", 431},
  };
  for (const Case& c : cases) {
    RawClient client(port_);
    ASSERT_TRUE(client.send(c.bytes));
    const RawAnswer answer = client.read_answer(1s);
    EXPECT_EQ(answer.status, c.status) << c.bytes.substr(0, 120);
    EXPECT_TRUE(answer.closes()) << c.bytes.substr(0, 120);
  }
}

TEST_F(HostileClients, PipelinedAndHalfClosedRequestsAreAnsweredInOrderAndRangeIsIgnored) {
  RawClient client(port_);
  std::string burst;
  for (int i = 0; i < 200; ++i) burst += "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
  burst += predict_request();
  burst += "GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-10,20-30,0-\r\n\r\n";
  ASSERT_TRUE(client.send(burst));
  client.half_close();
  for (int i = 0; i < 200; ++i) ASSERT_EQ(client.read_answer().status, 200) << i;
  const RawAnswer predicted = client.read_answer(10s);
  EXPECT_EQ(predicted.status, 200);
  EXPECT_NE(predicted.body.find("predictions"), std::string::npos);
  const RawAnswer page = client.read_answer();
  EXPECT_EQ(page.status, 200);  // never 206
  EXPECT_NE(page.body.find(":classify"), std::string::npos);
  EXPECT_TRUE(client.closed_within(2s));
}

TEST_F(HostileClients, ABurstOfNewConnectionsIsNotReset) {
  std::vector<std::unique_ptr<RawClient>> burst;
  for (int i = 0; i < 200; ++i) burst.push_back(std::make_unique<RawClient>(port_));
  int answered = 0;
  for (auto& c : burst) {
    if (c->connected() && c->send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n") &&
        c->read_answer(10s).status == 200) {
      ++answered;
    }
  }
  EXPECT_EQ(answered, 200);
}

TEST_F(HostileClients, SighupIsIgnoredAndSigtermAnswersWhatWasSentBeforeIt) {
  // A server whose batches wait 3 s to fill: the predict below is still queued when SIGTERM
  // comes, and the drain runs it at once.
  EXPECT_EQ(serve_->terminate_and_wait(), 0);
  terminated_ = true;
  ServeProcess serve(
      log_ + ".batching",
      {"--model_dir=" + dir_->sub("model"), "--port=0", "--rest_api_port=-1", "--num_threads=1",
       "--max_batch_size=8", "--batch_timeout_micros=3000000", "--batch_wait_when_idle=true"});
  const int port = serve.port();
  ASSERT_GT(port, 0) << read_text(log_ + ".batching");
  serve.send_signal(SIGHUP);
  std::this_thread::sleep_for(200ms);
  RawClient kept(port);
  ASSERT_TRUE(kept.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_EQ(kept.read_answer(5s).status, 200);  // still serving after SIGHUP
  // Sent on the kept-alive connection just before SIGTERM: answered, with Connection: close.
  ASSERT_TRUE(kept.send(predict_request()));
  std::this_thread::sleep_for(300ms);
  int exit_code = -1;
  std::thread stop([&] { exit_code = serve.terminate_and_wait(); });
  const RawAnswer answer = kept.read_answer(10s);
  stop.join();
  EXPECT_EQ(answer.status, 200) << answer.head;
  EXPECT_TRUE(answer.closes()) << answer.head;
  EXPECT_EQ(exit_code, 0) << read_text(log_ + ".batching");
}

}  // namespace
}  // namespace ic
