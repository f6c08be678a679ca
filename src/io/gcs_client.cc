#include "io/gcs_client.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "io/gcs_json.h"

namespace ic {
namespace {

bool ok_status(long status) { return status >= 200 && status < 300; }

// The bytes [begin, end) of the concatenation of `pieces`, copied into one buffer.
std::string gather(const std::vector<std::string_view>& pieces, uint64_t begin, uint64_t end) {
  std::string out;
  out.reserve(end - begin);
  uint64_t at = 0;
  for (const std::string_view piece : pieces) {
    const uint64_t piece_end = at + piece.size();
    if (piece_end > begin && at < end) {
      const uint64_t from = std::max(begin, at) - at;
      const uint64_t to = std::min(end, piece_end) - at;
      out.append(piece.substr(from, to - from));
    }
    at = piece_end;
  }
  return out;
}

}  // namespace

Result<GcsObjectName> parse_gcs_url(const std::string& path) {
  constexpr std::string_view kScheme = "gs://";
  if (path.rfind(kScheme, 0) != 0) return error(path, ": not a gs:// path");
  const std::string rest = path.substr(kScheme.size());
  const size_t slash = rest.find('/');
  GcsObjectName name;
  name.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) name.object = rest.substr(slash + 1);
  if (name.bucket.empty()) return error(path, ": a gs:// path needs a bucket (gs://bucket/path)");
  for (const char c : name.bucket) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return error(path, ": '", name.bucket, "' is not a valid bucket name");
    }
  }
  return name;
}

std::string gcs_endpoint_from_environment() {
  const char* host = std::getenv("STORAGE_EMULATOR_HOST");
  if (host == nullptr || *host == '\0') return "https://storage.googleapis.com";
  std::string endpoint = host;
  if (endpoint.find("://") == std::string::npos) endpoint = "http://" + endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

std::string describe_http_error(const HttpResponse& response) {
  std::string out = "HTTP " + std::to_string(response.status);
  const std::string message = error_message_of(response.body);
  if (!message.empty()) out += ": " + message;
  return out;
}

GcsClient::GcsClient(std::string endpoint, std::unique_ptr<TokenSource> tokens, RetryPolicy policy)
    : endpoint_(std::move(endpoint)), tokens_(std::move(tokens)), policy_(policy) {
  // IC_STORAGE_UPLOAD_CHUNK_BYTES: a smaller threshold and chunk (whole 256 KiB units), so
  // that tests exercise resumable uploads with small objects.
  if (const char* v = std::getenv("IC_STORAGE_UPLOAD_CHUNK_BYTES"); v != nullptr) {
    const uint64_t units = std::strtoull(v, nullptr, 10) / kChunkUnit;
    if (units > 0) resumable_threshold_ = chunk_bytes_ = units * kChunkUnit;
  }
}

std::string GcsClient::object_url(const GcsObjectName& name) const {
  return endpoint_ + "/storage/v1/b/" + percent_encode(name.bucket) + "/o/" +
         percent_encode(name.object);
}

std::string GcsClient::media_upload_url(const GcsObjectName& name,
                                        const std::string& upload_type) const {
  return endpoint_ + "/upload/storage/v1/b/" + percent_encode(name.bucket) +
         "/o?uploadType=" + upload_type + "&name=" + percent_encode(name.object);
}

std::string GcsClient::list_url(const std::string& bucket, const std::string& prefix,
                                const std::string& delimiter, const std::string& page_token,
                                int max_results) const {
  std::string url =
      endpoint_ + "/storage/v1/b/" + percent_encode(bucket) + "/o?prefix=" + percent_encode(prefix);
  if (!delimiter.empty()) url += "&delimiter=" + percent_encode(delimiter);
  if (!page_token.empty()) url += "&pageToken=" + percent_encode(page_token);
  if (max_results > 0) url += "&maxResults=" + std::to_string(max_results);
  return url;
}

Status GcsClient::authorize(HttpRequest* request, const std::string& what) {
  Result<std::optional<std::string>> auth = tokens_->authorization_header();
  if (!auth.ok()) {
    return auth.status().with_context(what + ": credentials (" + tokens_->describe() + ")");
  }
  if (*auth) request->headers.push_back(**auth);
  request->timeout = std::min(request->timeout, policy_.request_timeout);
  return Status();
}

Result<HttpResponse> GcsClient::send(HttpRequest request, const std::string& what) {
  IC_RETURN_IF_ERROR(authorize(&request, what));
  return http_send_with_retries([&] { return request; }, what, policy_);
}

Result<std::optional<GcsObjectInfo>> GcsClient::stat(const GcsObjectName& name) {
  HttpRequest request;
  request.url = object_url(name);
  IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, name.url()));
  if (response.status == 404) return std::optional<GcsObjectInfo>();
  if (!ok_status(response.status)) {
    return error(status_code_for_http(response.status), name.url(),
                 ": reading the object's metadata failed: ", describe_http_error(response));
  }
  Result<ObjectMetadata> metadata = parse_object_metadata_body(response.body);
  if (!metadata.ok()) return metadata.status().with_context(name.url());
  GcsObjectInfo info;
  info.size = metadata->size;
  info.generation = std::move(metadata->generation);
  return std::optional<GcsObjectInfo>(info);
}

Status GcsClient::read(const GcsObjectName& name, const std::string& generation, uint64_t offset,
                       size_t n, char* out) {
  if (n == 0) return Status();
  HttpRequest request;
  request.url = object_url(name) + "?alt=media";
  if (!generation.empty()) request.url += "&generation=" + percent_encode(generation);
  request.headers = {"Range: bytes=" + std::to_string(offset) + "-" +
                     std::to_string(offset + n - 1)};
  request.sink = out;
  request.sink_capacity = n;
  const std::string what =
      name.url() + " bytes [" + std::to_string(offset) + ", " + std::to_string(offset + n) + ")";
  IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, what));
  if (response.status == 404) {
    return not_found(name.url(), ": no such object (deleted while reading?)");
  }
  if (!ok_status(response.status)) {
    return error(status_code_for_http(response.status), what,
                 ": read failed: ", describe_http_error(response));
  }
  if (response.sink_bytes != n) {
    return data_loss(what, ": read ", response.sink_bytes, " bytes instead of ", n,
                     " (object shorter than expected?)");
  }
  return Status();
}

Status GcsClient::upload(const GcsObjectName& name, const std::vector<std::string_view>& pieces) {
  uint64_t total = 0;
  for (const std::string_view p : pieces) total += p.size();
  if (total > resumable_threshold_) return resumable_upload(name, pieces, total);
  const std::string body = gather(pieces, 0, total);
  HttpRequest request;
  request.method = "POST";
  request.url = media_upload_url(name, "media");
  request.headers = {"Content-Type: application/octet-stream"};
  request.body = body;
  IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, name.url()));
  if (!ok_status(response.status)) {
    return error(status_code_for_http(response.status), name.url(),
                 ": upload failed: ", describe_http_error(response));
  }
  return Status();
}

namespace {

// How many bytes a resumable session of `total` bytes holds, from a 308's "Range: bytes=0-N"
// (none: 0). A real server keeps whole 256 KiB units of the chunks we send.
Result<uint64_t> persisted_bytes(const HttpResponse& response, uint64_t total) {
  const auto range = response.headers.find("range");
  if (range == response.headers.end()) return uint64_t{0};
  return parse_upload_range_header(range->second, total);
}

}  // namespace

Status GcsClient::resumable_upload(const GcsObjectName& name,
                                   const std::vector<std::string_view>& pieces, uint64_t total) {
  HttpRequest start;
  start.method = "POST";
  start.url = media_upload_url(name, "resumable");
  start.headers = {"Content-Type: application/json",
                   "X-Upload-Content-Type: application/octet-stream",
                   "X-Upload-Content-Length: " + std::to_string(total)};
  const std::string metadata = nlohmann::json{{"name", name.object}}.dump();
  start.body = metadata;
  IC_ASSIGN_OR_RETURN(const HttpResponse started, send(start, name.url()));
  const auto location = started.headers.find("location");
  if (!ok_status(started.status) || location == started.headers.end()) {
    return error(status_code_for_http(started.status), name.url(),
                 ": starting a resumable upload failed: ", describe_http_error(started));
  }
  const std::string session = location->second;
  uint64_t sent = 0;
  int failures = 0;
  std::mt19937_64 rng(std::random_device{}());
  while (true) {
    const uint64_t end = std::min<uint64_t>(total, sent + chunk_bytes_);
    const std::string chunk = gather(pieces, sent, end);
    HttpRequest put;
    put.method = "PUT";
    put.url = session;
    put.headers = {"Content-Range: bytes " + std::to_string(sent) + "-" + std::to_string(end - 1) +
                   "/" + std::to_string(total)};
    put.body = chunk;
    const std::string what = name.url() + " (upload of bytes [" + std::to_string(sent) + ", " +
                             std::to_string(end) + ") of " + std::to_string(total) + ")";
    // One attempt: after a failure the session says what it kept, and we go on from there
    // (resending bytes it already has would be refused).
    IC_RETURN_IF_ERROR(authorize(&put, what));
    const Result<HttpResponse> response = http_send(put, what);
    if (response.ok() && ok_status(response->status)) return Status();  // the object exists
    if (response.ok() && response->status == 308) {
      Result<uint64_t> persisted_or = persisted_bytes(*response, total);
      if (!persisted_or.ok()) return persisted_or.status().with_context(what);
      const uint64_t persisted = *persisted_or;
      if (persisted <= sent) return error(what, ": the server kept no bytes of the chunk");
      sent = persisted;
      failures = 0;
      continue;
    }
    if (response.ok() && !RetryPolicy::retryable_status(response->status)) {
      return error(status_code_for_http(response->status), what,
                   ": failed: ", describe_http_error(*response));
    }
    const std::string why =
        response.ok() ? describe_http_error(*response) : response.status().message();
    if (++failures >= policy_.max_attempts) return unavailable(what, ": failed: ", why);
    log_retry(failures, policy_.max_attempts, why);
    std::this_thread::sleep_for(policy_.delay_before_retry(failures, rng()));
    HttpRequest query;
    query.method = "PUT";
    query.url = session;
    query.headers = {"Content-Range: bytes */" + std::to_string(total)};
    IC_ASSIGN_OR_RETURN(const HttpResponse status, send(query, name.url()));
    if (ok_status(status.status)) return Status();
    if (status.status != 308) {
      return error(status_code_for_http(status.status), name.url(),
                   ": the resumable upload session is gone: ", describe_http_error(status));
    }
    Result<uint64_t> kept = persisted_bytes(status, total);
    if (!kept.ok()) return kept.status().with_context(name.url());
    sent = *kept;
  }
}

Result<GcsListing> GcsClient::list(const std::string& bucket, const std::string& prefix,
                                   const std::string& delimiter, int max_results) {
  GcsListing listing;
  std::string page_token;
  const std::string what = "gs://" + bucket + "/" + prefix;
  do {
    HttpRequest request;
    request.url = list_url(bucket, prefix, delimiter, page_token, max_results);
    IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, what));
    if (response.status == 404) return not_found("gs://", bucket, ": no such bucket");
    if (!ok_status(response.status)) {
      return error(status_code_for_http(response.status), what,
                   ": listing failed: ", describe_http_error(response));
    }
    Result<ListingPage> page = parse_listing_body(response.body);
    if (!page.ok()) return page.status().with_context(what);
    for (std::string& object : page->objects) listing.objects.push_back(std::move(object));
    for (std::string& prefix : page->prefixes) listing.prefixes.push_back(std::move(prefix));
    page_token = std::move(page->next_page_token);
  } while (!page_token.empty() && max_results <= 0);
  return listing;
}

Status GcsClient::remove(const GcsObjectName& name) {
  HttpRequest request;
  request.method = "DELETE";
  request.url = object_url(name);
  IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, name.url()));
  if (response.status == 404 || ok_status(response.status)) return Status();
  return error(status_code_for_http(response.status), name.url(),
               ": delete failed: ", describe_http_error(response));
}

Status GcsClient::copy(const GcsObjectName& from, const GcsObjectName& to) {
  std::string token;
  const std::string what = from.url() + " -> " + to.url();
  for (int round = 0; round < 10000; ++round) {
    HttpRequest request;
    request.method = "POST";
    request.url = object_url(from) + "/rewriteTo/b/" + percent_encode(to.bucket) + "/o/" +
                  percent_encode(to.object);
    if (!token.empty()) request.url += "?rewriteToken=" + percent_encode(token);
    request.headers = {"Content-Type: application/json"};
    request.body = "{}";
    IC_ASSIGN_OR_RETURN(const HttpResponse response, send(request, what));
    if (!ok_status(response.status)) {
      return error(status_code_for_http(response.status), what,
                   ": copy failed: ", describe_http_error(response));
    }
    Result<RewriteProgress> progress = parse_rewrite_body(response.body);
    if (!progress.ok()) return progress.status().with_context(what + ": copy");
    if (progress->done) return Status();
    token = std::move(progress->rewrite_token);
  }
  return error(what, ": copy did not finish");
}

}  // namespace ic
