// The serve tests' HTTP client (cpp-httplib), compiled once for the whole suite.
#include "serve_test_util.h"

#include <httplib.h>

namespace ic::testing {
namespace {

HttpAnswer to_answer(const httplib::Result& result) {
  HttpAnswer answer;
  if (!result) return answer;
  answer.status = result->status;
  answer.body = result->body;
  return answer;
}

httplib::Client client_for(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  return client;
}

}  // namespace

HttpAnswer http_get(int port, const std::string& path) {
  return to_answer(client_for(port).Get(path.c_str()));
}

HttpAnswer http_post(int port, const std::string& path, const std::string& body) {
  return to_answer(client_for(port).Post(path.c_str(), body, "application/json"));
}

}  // namespace ic::testing
