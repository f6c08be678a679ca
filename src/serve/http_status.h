// The HTTP status a Status is answered with: the one table for every REST answer serve gives,
// whatever produced the error (request parsing, the model lookup, the batch queue). It follows
// Google's mapping of these codes to HTTP (google.rpc.Code) except where http_status.cc says.
// The gRPC front end sends each StatusCode as the gRPC code of the same name instead
// (grpc_code_for: OK 0, CANCELLED 1, INVALID_ARGUMENT 3, NOT_FOUND 5, ALREADY_EXISTS 6,
// RESOURCE_EXHAUSTED 8, INTERNAL 13, UNAVAILABLE 14, DATA_LOSS 15).
#pragma once

#include "core/status.h"

namespace ic {

// 200 for ok; 400, 404, 409, 413, 500 or 503 for an error (docs/serving.md lists which).
int http_status_for(StatusCode code);

// The gRPC status code (grpc::StatusCode's value) of the same name as `code`.
int grpc_code_for(StatusCode code);

}  // namespace ic
