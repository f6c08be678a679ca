// The gs:// code's parsers of JSON that comes from outside: Cloud Storage JSON API responses,
// OAuth token responses (a token endpoint or the GCE metadata server) and service-account key
// files. Each is a pure function of the body's text: it never throws (types are checked before
// every read; nlohmann's exceptions are caught at the boundary as a last resort), and its
// errors name the field that is wrong but never quote the body, a token or a key. The callers
// (gcs_client.cc, gcs_auth.cc) add which object or credential source the body came from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// A token response's lifetime: "expires_in" must be an integer (or a string of decimal digits)
// of seconds; it is clamped into [kMinTokenLifetimeSeconds, kMaxTokenLifetimeSeconds] (a token
// that claims to live for a year is still fetched again within a day; one that claims 0 s is
// used for 1 s). A negative, fractional, non-numeric or absurdly large (> 10^9 s) value is an
// error. Absent, it defaults to kDefaultTokenLifetimeSeconds (an hour, what Google issues).
inline constexpr int64_t kMinTokenLifetimeSeconds = 1;
inline constexpr int64_t kMaxTokenLifetimeSeconds = 24 * 3600;
inline constexpr int64_t kDefaultTokenLifetimeSeconds = 3600;

struct TokenResponse {
  std::string access_token;                                   // never empty
  int64_t expires_in_seconds = kDefaultTokenLifetimeSeconds;  // within the range above
};
// {"access_token": "…", "expires_in": 3599, "token_type": "Bearer"}
Result<TokenResponse> parse_token_response_body(std::string_view body);

struct ObjectMetadata {
  uint64_t size = 0;
  std::string generation;  // "" when absent; the decimal text otherwise
};
// An object resource: "size" is a decimal string (as the JSON API sends it) or a non-negative
// integer, overflow-checked; "generation" likewise (optional).
Result<ObjectMetadata> parse_object_metadata_body(std::string_view body);

struct ListingPage {
  std::vector<std::string> objects;   // items[].name
  std::vector<std::string> prefixes;  // prefixes[]
  std::string next_page_token;        // "" on the last page
};
// One page of objects.list: every item must have a string name, every prefix must be a string.
Result<ListingPage> parse_listing_body(std::string_view body);

struct RewriteProgress {
  bool done = true;
  std::string rewrite_token;  // non-empty when !done
};
// objects.rewrite's answer: {"done": false, "rewriteToken": "…"} until {"done": true, …}. A
// body without "done" counts as done (what the emulator sends for a one-shot copy).
Result<RewriteProgress> parse_rewrite_body(std::string_view body);

// An error response's error.message; "" when the body is not such a response.
std::string error_message_of(std::string_view body);

// How many bytes a resumable upload session of `total` bytes holds, from the value of a 308's
// Range header, "bytes=0-N": N + 1, where "bytes=0-0" counts as none (how some emulators say
// "nothing yet"). Anything else, or N + 1 > total, is an error (not a JSON body, but just as
// much outside input: a wrong value would make the upload resend from past the data's end).
Result<uint64_t> parse_upload_range_header(std::string_view value, uint64_t total);

// Parses a decimal unsigned integer: digits only (no sign, space or exponent), 1..20 of them,
// at most UINT64_MAX. Exposed for the tests and the fuzzer.
bool parse_decimal_uint64(std::string_view text, uint64_t* value);

}  // namespace ic
