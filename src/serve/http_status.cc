#include "serve/http_status.h"

namespace ic {

int http_status_for(StatusCode code) {
  struct Row {
    StatusCode code;
    int http;
  };
  static constexpr Row kTable[] = {
      {StatusCode::ok, 200},
      {StatusCode::invalid_argument, 400},  // a body that is not a valid request
      {StatusCode::not_found, 404},         // an unknown model, version or path
      {StatusCode::already_exists, 409},
      // A request over one of the server's fixed limits (body bytes, image pixels). Google's
      // mapping says 429, which asks the client to send the same request again later: here
      // it could never succeed.
      {StatusCode::resource_exhausted, 413},
      // No model loaded yet, a full queue (TensorFlow's batch scheduler also answers a full
      // queue with UNAVAILABLE), a request not answered in time: try again later.
      {StatusCode::unavailable, 503},
      // The server is shutting down. (Google's 499 means that the client went away.)
      {StatusCode::cancelled, 503},
      {StatusCode::data_loss, 500},
      {StatusCode::internal, 500},
  };
  for (const Row& row : kTable) {
    if (row.code == code) return row.http;
  }
  return 500;
}

int grpc_code_for(StatusCode code) {
  struct Row {
    StatusCode code;
    int grpc;
  };
  static constexpr Row kTable[] = {
      {StatusCode::ok, 0},
      {StatusCode::cancelled, 1},
      {StatusCode::invalid_argument, 3},
      {StatusCode::not_found, 5},
      {StatusCode::already_exists, 6},
      {StatusCode::resource_exhausted, 8},
      {StatusCode::internal, 13},
      {StatusCode::unavailable, 14},
      {StatusCode::data_loss, 15},
  };
  for (const Row& row : kTable) {
    if (row.code == code) return row.grpc;
  }
  return 13;  // INTERNAL
}

}  // namespace ic
