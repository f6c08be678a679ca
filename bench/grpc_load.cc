// A closed-loop gRPC load for serve (bench/serve_bench.sh): `connections` threads, each on its
// own channel, send TensorFlow Serving Predict calls (the classify signature: one JPEG as a
// DT_STRING image_bytes tensor, decoded and preprocessed by the server, as REST's b64
// instance is) back to back for `seconds`, then print one line as wrk's script does:
//   RESULT rps=... p50_ms=... p99_ms=... requests=N errors=N
//   grpc_load --port=8500 --image=x.jpg [--model=inception_v3] [--connections=8] [--seconds=30]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/tensorflow_serving/prediction_service.grpc.pb.h"

namespace {

namespace tfs = tensorflow::serving;
using Clock = std::chrono::steady_clock;

struct LoadOptions {
  int port = 8500;
  std::string image, model = "inception_v3";
  int connections = 8;
  int seconds = 30;
};

bool parse(int argc, char** argv, LoadOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) return false;
    const std::string key = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    try {
      if (key == "port")
        o->port = std::stoi(value);
      else if (key == "image")
        o->image = value;
      else if (key == "model")
        o->model = value;
      else if (key == "connections")
        o->connections = std::stoi(value);
      else if (key == "seconds")
        o->seconds = std::stoi(value);
      else
        return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return !o->image.empty() && o->connections > 0 && o->seconds > 0;
}

double percentile(std::vector<double>& sorted_ms, double p) {
  if (sorted_ms.empty()) return 0;
  const size_t i = std::min(sorted_ms.size() - 1, static_cast<size_t>(p / 100 * sorted_ms.size()));
  return sorted_ms[i];
}

}  // namespace

int main(int argc, char** argv) {
  LoadOptions o;
  if (!parse(argc, argv, &o)) {
    std::cerr << "usage: grpc_load --port=N --image=FILE [--model=NAME] [--connections=N] "
                 "[--seconds=N]\n";
    return 2;
  }
  std::ifstream in(o.image, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in || bytes.str().empty()) {
    std::cerr << "grpc_load: cannot read " << o.image << "\n";
    return 1;
  }
  tfs::PredictRequest request;
  request.mutable_model_spec()->set_name(o.model);
  request.mutable_model_spec()->set_signature_name("classify");
  tensorflow::TensorProto& tensor = (*request.mutable_inputs())["image_bytes"];
  tensor.set_dtype(tensorflow::DT_STRING);
  tensor.mutable_tensor_shape()->add_dim()->set_size(1);
  tensor.add_string_val(bytes.str());

  const auto end = Clock::now() + std::chrono::seconds(o.seconds);
  std::mutex mutex;
  std::vector<double> latencies_ms;
  std::atomic<int64_t> errors{0};
  std::string first_error;
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&, c] {
      grpc::ChannelArguments args;
      args.SetInt("grpc.channel_id", c);  // its own connection, not a shared subchannel
      args.SetMaxReceiveMessageSize(64 << 20);
      auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(o.port),
                                               grpc::InsecureChannelCredentials(), args);
      auto stub = tfs::PredictionService::NewStub(channel);
      std::vector<double> mine;
      while (Clock::now() < end) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        tfs::PredictResponse response;
        const auto start = Clock::now();
        const grpc::Status status = stub->Predict(&context, request, &response);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (status.ok()) {
          mine.push_back(ms);
        } else if (errors++ == 0) {
          std::lock_guard lock(mutex);
          first_error = status.error_message();
        }
      }
      std::lock_guard lock(mutex);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  const auto started = Clock::now();
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  if (!first_error.empty()) std::cerr << "grpc_load: first error: " << first_error << "\n";
  std::printf("RESULT rps=%.2f p50_ms=%.1f p99_ms=%.1f requests=%zu errors=%lld\n",
              static_cast<double>(latencies_ms.size()) / seconds, percentile(latencies_ms, 50),
              percentile(latencies_ms, 99), latencies_ms.size(),
              static_cast<long long>(errors.load()));
  return 0;
}
