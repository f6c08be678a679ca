// HTTP(S) requests through libcurl for the object-store clients, with the retry policy they
// share. Nothing here logs a header or a body: headers carry bearer tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // must outlive the call
  std::chrono::seconds timeout{300};
  // When set, the response body is written here (a caller's buffer) instead of into
  // HttpResponse::body; more than `sink_capacity` bytes is an error.
  char* sink = nullptr;
  size_t sink_capacity = 0;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  size_t sink_bytes = 0;                       // bytes written to HttpRequest::sink
  std::map<std::string, std::string> headers;  // names lower-cased
};

// One request; an error only for a transport failure (connection refused or reset, timeout:
// unavailable), whose message says what curl said and names `what` (an object, never a URL
// with a token).
Result<HttpResponse> http_send(const HttpRequest& request, const std::string& what);

// Bounded exponential backoff with full jitter: the delay before retry n (1-based) is uniform
// in [0, min(max_delay, initial_delay * 2^(n-1))].
struct RetryPolicy {
  int max_attempts = 6;
  std::chrono::milliseconds initial_delay{200};
  std::chrono::milliseconds max_delay{10000};
  // A request taking longer is abandoned (and retried): a stalled connection never hangs us.
  std::chrono::seconds request_timeout{300};
  std::chrono::milliseconds delay_before_retry(int retry, uint64_t random_bits) const;
  // 408, 429 and 5xx are worth another try; other statuses are answers.
  static bool retryable_status(long status);
};
// The code of an error answer that a caller gives up on: 404 not_found; a retryable status
// (the retries were used up) unavailable; any other internal.
StatusCode status_code_for_http(long status);

// The policy from the environment: IC_STORAGE_RETRIES (attempts), IC_STORAGE_RETRY_DELAY_MS
// (initial delay) and IC_STORAGE_TIMEOUT_S (per request) override the defaults, so tests can
// make failures outlast the retries, and stalls time out, fast.
RetryPolicy storage_retry_policy();

// Sends `make()`'s request until it gets a non-retryable answer or the attempts are used up;
// each retry is logged (to stderr, with `what` and the reason, never headers). The last
// transport error or retryable response is what a caller sees when every attempt failed.
Result<HttpResponse> http_send_with_retries(const std::function<HttpRequest()>& make,
                                            const std::string& what, const RetryPolicy& policy);

// The line http_send_with_retries logs for a failed attempt (stderr).
void log_retry(int attempt, int max_attempts, const std::string& why);

// RFC 3986 percent-encoding of everything but unreserved characters (so '/' becomes %2F, as
// object names in JSON API paths need).
std::string percent_encode(std::string_view text);
// base64url without padding (JWT segments).
std::string base64url(std::string_view bytes);

}  // namespace ic
