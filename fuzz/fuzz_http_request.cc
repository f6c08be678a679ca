// serve's HTTP/1.1 request parser (http/request_parser.h). The first byte picks a chunk size;
// the rest is fed whole and in chunks of that size, and both must end the same way: pipelined
// or split, a request is read one way only. Also checks the limits: no body over its limit,
// no head held past max_header_bytes.
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "http/request_parser.h"

namespace {

struct Outcome {
  ic::http::RequestParser::State state;
  int status;
  std::string method, target, body;
  size_t used;
};

Outcome parse(std::string_view bytes, size_t chunk) {
  const ic::http::ParserLimits limits{512, 16, 4096};
  ic::http::RequestParser parser(limits);
  size_t used = 0;
  while (used < bytes.size()) {
    const std::string_view offered = bytes.substr(used, chunk);
    const size_t n = parser.feed(offered);
    used += n;
    if (n < offered.size()) break;  // the request is complete, or the parser failed
  }
  const ic::http::Request& r = parser.request();
  if (r.body.size() > limits.max_body_bytes) std::abort();
  return {parser.state(), parser.error_status(), r.method, r.target, r.body, used};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const std::string_view bytes = ic::fuzz::as_view(data + 1, size - 1);
  const Outcome whole = parse(bytes, bytes.size() + 1);
  const Outcome split = parse(bytes, chunk);
  if (whole.state != split.state || whole.status != split.status || whole.body != split.body ||
      whole.method != split.method || whole.target != split.target) {
    std::abort();
  }
  if (whole.state == ic::http::RequestParser::State::complete && whole.used != split.used) {
    std::abort();
  }
  return 0;
}
