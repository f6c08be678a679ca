// Cloud Storage's JSON API, the requests gs:// paths need: object metadata, ranged media
// downloads, simple and resumable uploads, listing by prefix and delimiter (every page), delete
// and server-side rewrite. Every request goes through http_send_with_retries (bounded
// exponential backoff with jitter on 408/429/5xx and transport errors); every error names the
// object as gs://bucket/name and never carries a credential.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/gcs_auth.h"
#include "io/http_client.h"

namespace ic {

struct GcsObjectName {
  std::string bucket;
  std::string object;  // may be empty: the bucket itself
  std::string url() const { return "gs://" + bucket + (object.empty() ? "" : "/" + object); }
};
// Splits "gs://bucket/a/b" into {"bucket", "a/b"}; an error names a malformed path.
Result<GcsObjectName> parse_gcs_url(const std::string& path);

// Where requests go: STORAGE_EMULATOR_HOST ("host:port" or a URL; http:// when no scheme is
// given) or https://storage.googleapis.com.
std::string gcs_endpoint_from_environment();

struct GcsObjectInfo {
  uint64_t size = 0;
  std::string generation;
};

struct GcsListing {
  std::vector<std::string> objects;   // full object names
  std::vector<std::string> prefixes;  // "sub/dir/" names under the delimiter
};

class GcsClient {
 public:
  GcsClient(std::string endpoint, std::unique_ptr<TokenSource> tokens, RetryPolicy policy);

  // nullopt when the object does not exist.
  Result<std::optional<GcsObjectInfo>> stat(const GcsObjectName& name);
  // Exactly `n` bytes at `offset` of the object's `generation` (empty: the live one).
  Status read(const GcsObjectName& name, const std::string& generation, uint64_t offset, size_t n,
              char* out);
  // Replaces the object with the concatenation of `pieces`: one simple upload up to 8 MiB, a
  // resumable upload in 16 MiB chunks above (after a failed chunk it asks the session how
  // much it kept and goes on from there).
  Status upload(const GcsObjectName& name, const std::vector<std::string_view>& pieces);
  // Objects whose names start with `prefix`; with a delimiter, names past it roll up into
  // prefixes. max_results > 0 stops after the first page of that size.
  Result<GcsListing> list(const std::string& bucket, const std::string& prefix,
                          const std::string& delimiter, int max_results = 0);
  // Deletes; a missing object is not an error.
  Status remove(const GcsObjectName& name);
  // Server-side copy (rewrite, repeated until done).
  Status copy(const GcsObjectName& from, const GcsObjectName& to);

  // Resumable chunks are whole multiples of this (the JSON API's rule).
  static constexpr uint64_t kChunkUnit = uint64_t{256} << 10;

  // URLs, exposed for tests.
  std::string object_url(const GcsObjectName& name) const;
  std::string media_upload_url(const GcsObjectName& name, const std::string& upload_type) const;
  std::string list_url(const std::string& bucket, const std::string& prefix,
                       const std::string& delimiter, const std::string& page_token,
                       int max_results) const;

 private:
  // Adds the current authorization header and the policy's timeout.
  Status authorize(HttpRequest* request, const std::string& what);
  // The request authorized and retried per the policy.
  Result<HttpResponse> send(HttpRequest request, const std::string& what);
  Status resumable_upload(const GcsObjectName& name, const std::vector<std::string_view>& pieces,
                          uint64_t total);

  std::string endpoint_;
  std::unique_ptr<TokenSource> tokens_;
  RetryPolicy policy_;
  uint64_t resumable_threshold_ = uint64_t{8} << 20;
  uint64_t chunk_bytes_ = uint64_t{16} << 20;
};

// "HTTP 404: No such object" from an error response, for messages.
std::string describe_http_error(const HttpResponse& response);

}  // namespace ic
