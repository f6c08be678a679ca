// The HTTP server against hostile and unusual clients on loopback: slow heads, bodies and
// readers never hold the service, refusals come at once, pipelined and half-closed requests
// are answered, limits hold, and a drain answers what was received. Every wait is bounded.
#include "http/server.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "raw_client_test_util.h"

namespace ic::http {
namespace {

using namespace std::chrono_literals;
using testing::RawAnswer;
using testing::RawClient;

Response text(std::string body) {
  Response response;
  response.content_type = "text/plain";
  response.body = std::move(body);
  return response;
}

Response handle(Request& request) {
  const std::string_view path = request.path();
  if (path == "/sleep") std::this_thread::sleep_for(300ms);
  if (path == "/big") return text(std::string(32 << 20, 'x'));
  if (path == "/body") return text(std::to_string(request.body.size()));
  return text(request.target);
}

class HttpServer : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    Result<std::unique_ptr<Server>> created = Server::create(options, handle);
    ASSERT_TRUE(created.ok()) << created.status().message();
    server_ = std::move(*created);
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (!server_) return;
    server_->shutdown();
    thread_.join();
  }
  int port() const { return server_->port(); }
  // A well-behaved client's GET, answered within `within`.
  void expect_answered(std::chrono::milliseconds within) {
    RawClient client(port());
    ASSERT_TRUE(client.send("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"));
    const auto start = std::chrono::steady_clock::now();
    const RawAnswer answer = client.read_answer(within);
    EXPECT_EQ(answer.status, 200) << "not answered within " << within.count() << " ms";
    EXPECT_LT(std::chrono::steady_clock::now() - start, within);
  }

  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(HttpServer, KeepAliveAnswersEachRequestOnOneConnection) {
  start();
  RawClient client(port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.send("GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n"));
    const RawAnswer answer = client.read_answer();
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, "/n" + std::to_string(i));
    EXPECT_FALSE(answer.closes());
  }
}

TEST_F(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  start();
  RawClient client(port());
  std::string burst;
  for (int i = 0; i < 200; ++i)
    burst += "GET /p" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n";
  burst += "POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd";
  ASSERT_TRUE(client.send(burst));
  for (int i = 0; i < 200; ++i) {
    const RawAnswer answer = client.read_answer();
    ASSERT_EQ(answer.status, 200) << "answer " << i;
    EXPECT_EQ(answer.body, "/p" + std::to_string(i));
  }
  EXPECT_EQ(client.read_answer().body, "4");
}

TEST_F(HttpServer, AHalfClosedClientStillGetsItsAnswers) {
  start();
  RawClient client(port());
  ASSERT_TRUE(client.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"));
  client.half_close();
  EXPECT_EQ(client.read_answer().body, "/a");
  EXPECT_EQ(client.read_answer().body, "/b");
  EXPECT_TRUE(client.closed_within(2s));
}

TEST_F(HttpServer, SlowHeadsHoldNoThreadAndAreCutAtTheHeaderTimeout) {
  ServerOptions options;
  options.worker_threads = 2;
  options.header_timeout = 1500ms;
  start(options);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 1000; ++i) {
    slow.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(slow.back()->connected()) << i;
    slow.back()->send("GET / HTTP/1.1\r\nX-Slow: ");
  }
  for (int i = 0; i < 100; ++i) slow[static_cast<size_t>(i)]->send("a");  // still trickling
  expect_answered(1s);
  // At the header timeout each slow one gets 408 and is closed.
  const RawAnswer cut = slow[0]->read_answer(5s);
  EXPECT_EQ(cut.status, 408) << cut.head << cut.body;
  EXPECT_TRUE(slow[999]->closed_within(5s));
}

TEST_F(HttpServer, SlowBodiesDoNotHoldTheServiceAndAreCutAtTheBodyTimeout) {
  ServerOptions options;
  options.worker_threads = 2;
  options.body_timeout = 1s;
  start(options);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 40; ++i) {  // bodies that never come
    slow.push_back(std::make_unique<RawClient>(port()));
    slow.back()->send("POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n");
  }
  std::this_thread::sleep_for(200ms);
  expect_answered(1s);
  EXPECT_EQ(slow[0]->read_answer(5s).status, 408);
}

TEST_F(HttpServer, ReadersThatNeverReadAreCutAtTheWriteTimeout) {
  ServerOptions options;
  options.worker_threads = 2;
  options.write_timeout = 1s;
  start(options);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 4; ++i) {  // answers of 32 MB, more than loopback's socket buffers
    slow.push_back(std::make_unique<RawClient>(port()));
    slow.back()->send("GET /big HTTP/1.1\r\nHost: a\r\n\r\n");
  }
  std::this_thread::sleep_for(300ms);
  expect_answered(1s);
  for (int i = 0; i < 100 && server_->open_connections() > 0; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(server_->open_connections(), 0u);
}

TEST_F(HttpServer, RefusalsComeAtOnceWithoutWaitingForABody) {
  ServerOptions options;
  options.parser.max_body_bytes = 1000;
  start(options);
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n",
       413},
      {"POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n", 413},
      {"POST /body HTTP/1.1\r\nHost: a\r\n\r\n", 411},
      {"POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: -4\r\n\r\n", 400},
      {"POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST /body HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400},
  };
  for (const Case& c : cases) {
    RawClient client(port());
    ASSERT_TRUE(client.send(c.head));
    const RawAnswer answer = client.read_answer(1s);
    EXPECT_EQ(answer.status, c.status) << c.head;
    EXPECT_TRUE(answer.closes()) << c.head;
  }
}

TEST_F(HttpServer, ExpectContinueGetsContinueThenTheAnswer) {
  start();
  RawClient client(port());
  ASSERT_TRUE(client.send(
      "POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(client.read_answer(1s).status, 100);
  ASSERT_TRUE(client.send("abc"));
  EXPECT_EQ(client.read_answer(1s).body, "3");
}

TEST_F(HttpServer, AnEndlessHeaderLineGets431) {
  start();
  RawClient client(port());
  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\nHost: a\r\nX: "));
  std::thread flood([&] { client.send(std::string(4 << 20, 'a')); });
  const RawAnswer answer = client.read_answer(2s);
  EXPECT_EQ(answer.status, 431);
  flood.join();
}

TEST_F(HttpServer, ConnectionLimitsPerAddressAndBudgetOfBodies) {
  ServerOptions options;
  options.max_connections_per_address = 4;
  options.max_inflight_body_bytes = 1000;
  options.parser.max_body_bytes = 5000;
  start(options);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(port()));
  RawClient fourth(port());
  ASSERT_TRUE(fourth.send("POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n"));
  EXPECT_EQ(fourth.read_answer(1s).status, 503);  // over the body budget, before its body
  std::this_thread::sleep_for(100ms);
  held.push_back(std::make_unique<RawClient>(port()));
  RawClient fifth(port());
  EXPECT_EQ(fifth.read_answer(1s).status, 503);  // a fifth connection from 127.0.0.1
  RawClient other(port(), "127.0.0.2");          // another address is still served
  ASSERT_TRUE(other.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(other.read_answer(1s).status, 200);
}

TEST_F(HttpServer, ShutdownAnswersWhatWasReceivedAndClosesTheListener) {
  start();
  RawClient busy(port());
  ASSERT_TRUE(busy.send("GET /sleep HTTP/1.1\r\nHost: a\r\n\r\n"));
  RawClient idle(port());
  std::this_thread::sleep_for(50ms);
  server_->shutdown();
  const RawAnswer answer = busy.read_answer(2s);
  EXPECT_EQ(answer.status, 200);
  EXPECT_TRUE(answer.closes());
  EXPECT_TRUE(idle.closed_within(2s));
  const int old_port = port();
  thread_.join();
  server_.reset();
  EXPECT_FALSE(RawClient(old_port).connected());
}

}  // namespace
}  // namespace ic::http
