// The gs:// code's parsers of outside JSON (io/gcs_json): token responses, object metadata,
// listing pages, rewrite progress, error messages and service-account keys, all on the same
// input (and the upload Range header parser). None may throw or crash, and what each accepts must
// keep its promises: a parsed size or generation prints back to decimal text that parses to the
// same value (and a body made of them parses the same), an accepted expires_in lies in the
// documented range, a page rebuilt from a parsed page parses the same, an unfinished rewrite has a
// token.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "io/gcs_auth.h"
#include "io/gcs_json.h"
#include "io/json.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

std::string quoted_array(const std::vector<std::string>& values) {
  std::string out = "[";
  for (const std::string& v : values) {
    if (out.size() > 1) out += ",";
    out += ic::json_quote(v);
  }
  return out + "]";
}

void check_decimal(std::string_view text) {
  uint64_t value = 0;
  if (!ic::parse_decimal_uint64(text, &value)) return;
  // The digits without leading zeros ("0" for all zeros).
  const size_t first = text.find_first_not_of('0');
  const std::string_view canonical = first == std::string_view::npos ? "0" : text.substr(first);
  require(std::to_string(value) == canonical);
}

// The input as a Range header of an upload of 2^20 bytes.
void check_range(std::string_view value) {
  const ic::Result<uint64_t> kept = ic::parse_upload_range_header(value, uint64_t{1} << 20);
  if (kept.ok()) require(*kept <= (uint64_t{1} << 20));
}

void check_token(std::string_view body) {
  const ic::Result<ic::TokenResponse> t = ic::parse_token_response_body(body);
  if (!t.ok()) return;
  require(!t->access_token.empty());
  require(t->expires_in_seconds >= ic::kMinTokenLifetimeSeconds &&
          t->expires_in_seconds <= ic::kMaxTokenLifetimeSeconds);
}

void check_metadata(std::string_view body) {
  const ic::Result<ic::ObjectMetadata> m = ic::parse_object_metadata_body(body);
  if (!m.ok()) return;
  const std::string size_text = std::to_string(m->size);
  uint64_t size = 0;
  require(ic::parse_decimal_uint64(size_text, &size) && size == m->size);
  std::string again = "{\"size\":\"" + size_text + "\"";
  if (!m->generation.empty()) {
    uint64_t generation = 0;
    require(ic::parse_decimal_uint64(m->generation, &generation));
    require(std::to_string(generation) == m->generation);
    again += ",\"generation\":" + m->generation;
  }
  const ic::Result<ic::ObjectMetadata> m2 = ic::parse_object_metadata_body(again + "}");
  require(m2.ok() && m2->size == m->size && m2->generation == m->generation);
}

void check_listing(std::string_view body) {
  const ic::Result<ic::ListingPage> p = ic::parse_listing_body(body);
  if (!p.ok()) return;
  std::string items = "[";
  for (const std::string& name : p->objects) {
    if (items.size() > 1) items += ",";
    items += "{\"name\":" + ic::json_quote(name) + "}";
  }
  items += "]";
  const std::string again = "{\"items\":" + items + ",\"prefixes\":" + quoted_array(p->prefixes) +
                            ",\"nextPageToken\":" + ic::json_quote(p->next_page_token) + "}";
  const ic::Result<ic::ListingPage> p2 = ic::parse_listing_body(again);
  require(p2.ok() && p2->objects == p->objects && p2->prefixes == p->prefixes &&
          p2->next_page_token == p->next_page_token);
}

void check_rewrite(std::string_view body) {
  const ic::Result<ic::RewriteProgress> r = ic::parse_rewrite_body(body);
  if (!r.ok()) return;
  require(r->done || !r->rewrite_token.empty());
}

void check_key(std::string_view body) {
  const ic::Result<ic::ServiceAccountKey> k =
      ic::parse_service_account_key(std::string(body), "key.json");
  if (!k.ok()) {
    require(k.status().message().rfind("key.json: ", 0) == 0);
    return;
  }
  require(!k->client_email.empty() && !k->private_key_pem.empty() && !k->token_uri.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body = ic::fuzz::as_view(data, size);
  check_decimal(body);
  check_range(body);
  check_token(body);
  check_metadata(body);
  check_listing(body);
  check_rewrite(body);
  (void)ic::error_message_of(body);
  check_key(body);
  return 0;
}
