#include "io/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace ic {
namespace {

// curl_global_init once per process, before the first handle (it is not thread-safe itself).
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using CurlHeaders = std::unique_ptr<curl_slist, SlistDeleter>;

struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  size_t upload_offset = 0;
  bool overflow = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->request->sink != nullptr && t->response->status / 100 == 2) {
    if (t->response->sink_bytes + n > t->request->sink_capacity) {
      t->overflow = true;
      return 0;  // aborts the transfer
    }
    std::memcpy(t->request->sink + t->response->sink_bytes, data, n);
    t->response->sink_bytes += n;
  } else {
    t->response->body.append(data, n);
  }
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue or a redirect)
    t->response->headers.clear();
    const size_t space = line.find(' ');
    if (space != std::string_view::npos) t->response->status = std::atol(data + space + 1);
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  t->response->headers[name] = std::string(value);
  return n;
}

size_t on_upload(char* out, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view body = t->request->body;
  const size_t n = std::min(size * count, body.size() - t->upload_offset);
  std::memcpy(out, body.data() + t->upload_offset, n);
  t->upload_offset += n;
  return n;
}

}  // namespace

Result<HttpResponse> http_send(const HttpRequest& request, const std::string& what) {
  init_curl_once();
  // One handle per thread, reset between requests: its connection cache keeps connections
  // (and TLS sessions) open from one range request to the next.
  thread_local CurlHandle curl(curl_easy_init());
  if (!curl) return error(what, ": cannot create an HTTP handle");
  curl_easy_reset(curl.get());
  HttpResponse response;
  Transfer transfer{&request, &response};
  CurlHeaders headers;
  for (const std::string& h : request.headers) {
    curl_slist* grown = curl_slist_append(headers.get(), h.c_str());
    if (grown == nullptr) return resource_exhausted(what, ": out of memory building headers");
    (void)headers.release();
    headers.reset(grown);
  }
  // Without this curl sends "Expect: 100-continue" and waits a second for large bodies.
  curl_slist* grown = curl_slist_append(headers.get(), "Expect:");
  if (grown != nullptr) {
    (void)headers.release();
    headers.reset(grown);
  }
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                   static_cast<long>(std::min<int64_t>(20, request.timeout.count())));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  if (request.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    // Never a null pointer: curl would then read the body from stdin.
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
    curl_easy_setopt(c, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode code = curl_easy_perform(c);
  if (transfer.overflow) {
    return error(what, ": the server sent more than the ", request.sink_capacity,
                 " bytes asked for");
  }
  // A transport failure (refused, reset, timed out) may pass: worth another try.
  if (code != CURLE_OK)
    return unavailable(what, ": ", request.method, " failed: ", curl_easy_strerror(code));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = status;
  return response;
}

std::chrono::milliseconds RetryPolicy::delay_before_retry(int retry, uint64_t random_bits) const {
  int64_t cap = initial_delay.count();
  for (int i = 1; i < retry && cap < max_delay.count(); ++i) cap *= 2;
  cap = std::min<int64_t>(cap, max_delay.count());
  if (cap <= 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(
      static_cast<int64_t>(random_bits % static_cast<uint64_t>(cap + 1)));
}

bool RetryPolicy::retryable_status(long status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

StatusCode status_code_for_http(long status) {
  if (status == 404) return StatusCode::not_found;
  return RetryPolicy::retryable_status(status) ? StatusCode::unavailable : StatusCode::internal;
}

RetryPolicy storage_retry_policy() {
  RetryPolicy policy;
  if (const char* v = std::getenv("IC_STORAGE_RETRIES"); v != nullptr && std::atoi(v) > 0) {
    policy.max_attempts = std::atoi(v);
  }
  if (const char* v = std::getenv("IC_STORAGE_RETRY_DELAY_MS"); v != nullptr && std::atoi(v) >= 0) {
    policy.initial_delay = std::chrono::milliseconds(std::atoi(v));
  }
  if (const char* v = std::getenv("IC_STORAGE_TIMEOUT_S"); v != nullptr && std::atoi(v) > 0) {
    policy.request_timeout = std::chrono::seconds(std::atoi(v));
  }
  return policy;
}

Result<HttpResponse> http_send_with_retries(const std::function<HttpRequest()>& make,
                                            const std::string& what, const RetryPolicy& policy) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  Result<HttpResponse> last = error(what, ": no attempt made");
  for (int attempt = 1; attempt <= std::max(1, policy.max_attempts); ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(policy.delay_before_retry(attempt - 1, rng()));
    last = http_send(make(), what);
    std::string why;
    if (!last.ok()) {
      why = last.status().message();
    } else if (RetryPolicy::retryable_status(last->status)) {
      why = what + ": HTTP " + std::to_string(last->status);
    } else {
      return last;
    }
    if (attempt < policy.max_attempts) {
      std::cerr << "storage: attempt " << attempt << " of " << policy.max_attempts << " failed ("
                << why << "); retrying" << std::endl;
    }
  }
  return last;
}

void log_retry(int attempt, int max_attempts, const std::string& why) {
  std::cerr << "storage: attempt " << attempt << " of " << max_attempts << " failed (" << why
            << "); retrying" << std::endl;
}

std::string percent_encode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string base64url(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (i + 1 < bytes.size()) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

}  // namespace ic
