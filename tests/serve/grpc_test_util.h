// The gRPC serve tests' common parts: a grpc++ client of the real server's TensorFlow Serving
// services, and the tensors and examples TF Serving's clients send.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "proto/tensorflow_serving/model_service.grpc.pb.h"
#include "proto/tensorflow_serving/prediction_service.grpc.pb.h"
#include "serve/api.h"

namespace ic::testing {

namespace tfs = tensorflow::serving;

// Stubs on a fresh channel to 127.0.0.1:port.
struct GrpcClient {
  explicit GrpcClient(int port)
      : channel(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                    grpc::InsecureChannelCredentials())),
        prediction(tfs::PredictionService::NewStub(channel)),
        models(tfs::ModelService::NewStub(channel)) {}
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<tfs::PredictionService::Stub> prediction;
  std::unique_ptr<tfs::ModelService::Stub> models;
};

// A context whose deadline is `timeout` away (a test never waits for ever).
inline std::unique_ptr<grpc::ClientContext> context_with_deadline(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

inline void set_spec(tfs::ModelSpec* spec, const std::string& name,
                     const std::string& signature = "") {
  spec->set_name(name);
  spec->set_signature_name(signature);
}

// The evaluation preprocessing of `jpeg` for a size x size model (what REST does to b64).
inline std::vector<float> preprocessed(const std::string& jpeg, int size) {
  std::vector<float> pixels(static_cast<size_t>(size) * size * 3);
  const Status status = fill_encoded_image(jpeg, 0, InstanceOptions{size, size, 0}, pixels.data());
  EXPECT_TRUE(status.ok()) << status.message();
  return pixels;
}

// A DT_FLOAT [N, size, size, 3] tensor of `images`, in tensor_content or in float_val.
inline tensorflow::TensorProto image_tensor(const std::vector<std::vector<float>>& images, int size,
                                            bool tensor_content) {
  tensorflow::TensorProto tensor;
  tensor.set_dtype(tensorflow::DT_FLOAT);
  for (int64_t d :
       {static_cast<int64_t>(images.size()), int64_t{size}, int64_t{size}, int64_t{3}}) {
    tensor.mutable_tensor_shape()->add_dim()->set_size(d);
  }
  for (const std::vector<float>& image : images) {
    if (tensor_content) {
      tensor.mutable_tensor_content()->append(reinterpret_cast<const char*>(image.data()),
                                              image.size() * sizeof(float));
    } else {
      for (float v : image) tensor.add_float_val(v);
    }
  }
  return tensor;
}

// A DT_STRING [N] tensor of encoded images.
inline tensorflow::TensorProto bytes_tensor(const std::vector<std::string>& images) {
  tensorflow::TensorProto tensor;
  tensor.set_dtype(tensorflow::DT_STRING);
  tensor.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(images.size()));
  for (const std::string& image : images) tensor.add_string_val(image);
  return tensor;
}

// A tf.Example holding `image` as image/encoded.
inline tensorflow::Example image_example(const std::string& image) {
  tensorflow::Example example;
  (*example.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value(
      image);
  return example;
}

}  // namespace ic::testing
