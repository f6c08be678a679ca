// REST and gRPC count the request bytes they hold against one budget (--max_inflight_bytes):
// a REST body being received holds its declared length, and a gRPC call that does not fit
// beside it is refused with UNAVAILABLE at once; when the REST client goes away, it runs.
// /metrics' serve_inflight_request_bytes shows what is held.
#include <memory>

#include "grpc_test_util.h"
#include "http/raw_client_test_util.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
using http::testing::RawClient;

// The serve_inflight_request_bytes gauge of /metrics.
int64_t inflight_bytes(const RunningServer& server) {
  const HttpAnswer metrics = http_get(server.port(), "/metrics");
  const std::string name = "\nserve_inflight_request_bytes ";
  const size_t at = metrics.body.find(name);
  return at == std::string::npos ? -1 : std::stoll(metrics.body.substr(at + name.size()));
}

// Predict until the answer's code is `wanted` (the server's loop thread takes a REST
// reservation, or drops it, a moment after the socket event); the last answer.
grpc::Status predict_until(GrpcClient& client, const tfs::PredictRequest& request,
                           grpc::StatusCode wanted) {
  grpc::Status status;
  for (int i = 0; i < 200; ++i) {
    tfs::PredictResponse response;
    status = client.prediction->Predict(context_with_deadline().get(), request, &response);
    if (status.error_code() == wanted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

TEST(ServeInflightBudget, RestBodiesAndGrpcMessagesShareOneBudget) {
  TempDir dir;
  train_model(dir.sub("model"), 2);
  ServerOptions options;
  options.model_dir = dir.sub("model");
  options.max_batch_size = 2;
  options.grpc_port = 0;
  options.max_inflight_bytes = 200 << 10;
  RunningServer server(options);
  GrpcClient client(server.server().grpc_port());

  tfs::PredictRequest request;  // one 75x75 float image: about 67 KB
  set_spec(request.mutable_model_spec(), "inception_v3");
  (*request.mutable_inputs())["images"] =
      image_tensor({std::vector<float>(75 * 75 * 3, 0.25f)}, 75, true);
  ASSERT_TRUE(predict_until(client, request, grpc::StatusCode::OK).ok());  // it fits alone

  auto rest = std::make_unique<RawClient>(server.port());
  ASSERT_TRUE(
      rest->send("POST /v1/models/inception_v3:predict HTTP/1.1\r\nHost: x\r\n"
                 "Content-Type: application/json\r\nContent-Length: 153600\r\n\r\n"));
  // No gRPC call is in flight until the server holds the REST body's bytes: one that were
  // would leave too little room for them, and the REST request would get the 503 instead
  // (as it should; but then there would be nothing to test here).
  int64_t held = 0;
  for (int i = 0; i < 500 && held < 153600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    held = inflight_bytes(server);
  }
  ASSERT_EQ(held, 153600);
  const grpc::Status refused = predict_until(client, request, grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_NE(refused.error_message().find("--max_inflight_bytes"), std::string::npos)
      << refused.error_message();

  rest.reset();  // the REST client goes away: its 150 KB are released
  const grpc::Status after = predict_until(client, request, grpc::StatusCode::OK);
  EXPECT_TRUE(after.ok()) << after.error_message();
}

}  // namespace
}  // namespace ic
