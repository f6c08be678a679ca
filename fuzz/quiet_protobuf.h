// libprotobuf logs every malformed message it is given (e.g. invalid UTF-8 in a map key) to
// stderr; a fuzzer gives it millions. The harnesses that parse protobufs include this once to
// drop those lines: the parse failure itself is what the code under test handles.
#pragma once

#include <google/protobuf/stubs/logging.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}
