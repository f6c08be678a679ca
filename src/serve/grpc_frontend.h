// TensorFlow Serving's gRPC API on a ServingCore: PredictionService (Predict, Classify,
// GetModelMetadata) and ModelService (GetModelStatus, HandleReloadConfigRequest), with the
// method paths of TF Serving (/tensorflow.serving.PredictionService/Predict, ...), so its own
// clients work unchanged. A call becomes BatchJobs on the core, as a REST request does; a
// Status's code becomes the gRPC code of the same name (serve/http_status.h), and a client
// deadline that passes while the call waits for the model answers DEADLINE_EXCEEDED.
// grpc++ stays inside grpc_frontend.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "serve/serving_core.h"

namespace ic {

class GrpcFrontend {
 public:
  // Listens on host:port (0: any free port) and answers calls on gRPC's own threads until
  // shutdown(). Messages over max_message_bytes answer RESOURCE_EXHAUSTED.
  static Result<std::unique_ptr<GrpcFrontend>> start(ServingCore& core, const std::string& host,
                                                     int port, int64_t max_message_bytes);
  struct Impl;
  explicit GrpcFrontend(std::unique_ptr<Impl> impl);
  ~GrpcFrontend();  // shutdown()

  int port() const;
  // Takes no new calls and returns once those in flight are answered (calls still waiting
  // after the request timeout are cancelled).
  void shutdown();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ic
