#include "io/gcs_json.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "io/gcs_auth.h"

namespace ic {
namespace {

using Json = nlohmann::json;

// expires_in above this is not a lifetime but garbage (about 31 years).
constexpr int64_t kAbsurdLifetimeSeconds = 1'000'000'000;

// The body as a JSON object, or nullopt (not JSON, or not an object). Never throws.
std::optional<Json> parse_object(std::string_view body) {
  Json doc = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  return doc;
}

// The member `key` of object `doc`, or nullptr when absent.
const Json* member(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  return it == doc.end() ? nullptr : &*it;
}

// A non-negative integer given as a JSON unsigned/non-negative integer or a decimal string.
bool non_negative_integer(const Json& value, uint64_t* out) {
  if (value.is_number_unsigned()) {
    *out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  if (value.is_string()) return parse_decimal_uint64(value.get_ref<const std::string&>(), out);
  return false;
}

// Runs `parse`, turning any exception that escaped the type checks into an error naming `what`.
template <typename T, typename Parse>
Result<T> guarded(const char* what, Parse parse) {
  try {
    return parse();
  } catch (const std::exception&) {
    return error(what, ": malformed JSON");
  }
}

}  // namespace

bool parse_decimal_uint64(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *value = v;
  return true;
}

Result<uint64_t> parse_upload_range_header(std::string_view value, uint64_t total) {
  constexpr std::string_view kPrefix = "bytes=0-";
  uint64_t last = 0;
  if (value.substr(0, kPrefix.size()) != kPrefix ||
      !parse_decimal_uint64(value.substr(kPrefix.size()), &last)) {
    return error("the upload session's Range header is not \"bytes=0-N\"");
  }
  if (last == 0) return uint64_t{0};
  if (last >= total) {
    return error("the upload session's Range header claims more bytes than the ", total,
                 " being uploaded");
  }
  return last + 1;
}

Result<TokenResponse> parse_token_response_body(std::string_view body) {
  return guarded<TokenResponse>("the token response", [&]() -> Result<TokenResponse> {
    const std::optional<Json> doc = parse_object(body);
    if (!doc) return error("the token response is not a JSON object");
    const Json* token = member(*doc, "access_token");
    if (token == nullptr || !token->is_string() || token->get_ref<const std::string&>().empty()) {
      return error("the token response has no access_token (a non-empty string)");
    }
    TokenResponse out;
    out.access_token = token->get<std::string>();
    if (const Json* expires = member(*doc, "expires_in"); expires != nullptr) {
      uint64_t seconds = 0;
      if (!non_negative_integer(*expires, &seconds) ||
          seconds > static_cast<uint64_t>(kAbsurdLifetimeSeconds)) {
        return error("the token response's expires_in is not a whole number of seconds in [0, ",
                     kAbsurdLifetimeSeconds, "]");
      }
      out.expires_in_seconds = std::clamp(static_cast<int64_t>(seconds), kMinTokenLifetimeSeconds,
                                          kMaxTokenLifetimeSeconds);
    }
    return out;
  });
}

Result<ObjectMetadata> parse_object_metadata_body(std::string_view body) {
  return guarded<ObjectMetadata>("the object's metadata", [&]() -> Result<ObjectMetadata> {
    const std::optional<Json> doc = parse_object(body);
    if (!doc) return error("the object's metadata is not a JSON object");
    const Json* size = member(*doc, "size");
    if (size == nullptr) return error("the object's metadata has no size");
    ObjectMetadata out;
    if (!non_negative_integer(*size, &out.size)) {
      return error("the object's metadata has a size that is not a non-negative 64-bit integer");
    }
    if (const Json* g = member(*doc, "generation"); g != nullptr) {
      uint64_t generation = 0;
      if (!non_negative_integer(*g, &generation)) {
        return error("the object's metadata has a generation that is not a non-negative integer");
      }
      out.generation = std::to_string(generation);
    }
    return out;
  });
}

Result<ListingPage> parse_listing_body(std::string_view body) {
  return guarded<ListingPage>("the listing", [&]() -> Result<ListingPage> {
    const std::optional<Json> doc = parse_object(body);
    if (!doc) return error("the listing is not a JSON object");
    ListingPage out;
    if (const Json* items = member(*doc, "items"); items != nullptr) {
      if (!items->is_array()) return error("the listing's items is not an array");
      for (const Json& item : *items) {
        const Json* name = item.is_object() ? member(item, "name") : nullptr;
        if (name == nullptr || !name->is_string()) {
          return error("the listing has an item without a string name");
        }
        out.objects.push_back(name->get<std::string>());
      }
    }
    if (const Json* prefixes = member(*doc, "prefixes"); prefixes != nullptr) {
      if (!prefixes->is_array()) return error("the listing's prefixes is not an array");
      for (const Json& p : *prefixes) {
        if (!p.is_string()) return error("the listing has a prefix that is not a string");
        out.prefixes.push_back(p.get<std::string>());
      }
    }
    if (const Json* next = member(*doc, "nextPageToken"); next != nullptr) {
      if (!next->is_string()) return error("the listing's nextPageToken is not a string");
      out.next_page_token = next->get<std::string>();
    }
    return out;
  });
}

Result<RewriteProgress> parse_rewrite_body(std::string_view body) {
  return guarded<RewriteProgress>("the rewrite response", [&]() -> Result<RewriteProgress> {
    const std::optional<Json> doc = parse_object(body);
    if (!doc) return error("the rewrite response is not a JSON object");
    RewriteProgress out;
    if (const Json* done = member(*doc, "done"); done != nullptr) {
      if (!done->is_boolean()) return error("the rewrite response's done is not a boolean");
      out.done = done->get<bool>();
    }
    if (out.done) return out;
    const Json* token = member(*doc, "rewriteToken");
    if (token == nullptr || !token->is_string() || token->get_ref<const std::string&>().empty()) {
      return error("the rewrite is not done and has no rewriteToken (a non-empty string)");
    }
    out.rewrite_token = token->get<std::string>();
    return out;
  });
}

std::string error_message_of(std::string_view body) {
  try {
    const std::optional<Json> doc = parse_object(body);
    if (!doc) return "";
    const Json* err = member(*doc, "error");
    if (err == nullptr || !err->is_object()) return "";
    const Json* message = member(*err, "message");
    return message != nullptr && message->is_string() ? message->get<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

Result<ServiceAccountKey> parse_service_account_key(const std::string& json,
                                                    const std::string& path) {
  Result<ServiceAccountKey> key =
      guarded<ServiceAccountKey>("the key", [&]() -> Result<ServiceAccountKey> {
        const std::optional<Json> doc = parse_object(json);
        if (!doc) return error("not a JSON object (expected a service-account key)");
        const Json* type = member(*doc, "type");
        if (type == nullptr || !type->is_string() ||
            type->get_ref<const std::string&>() != "service_account") {
          return error(
              "\"type\" is not \"service_account\" (only service-account keys are supported; "
              "for user credentials use the metadata server or an emulator)");
        }
        ServiceAccountKey out;
        for (const char* field : {"client_email", "private_key"}) {
          const Json* value = member(*doc, field);
          if (value == nullptr || !value->is_string() ||
              value->get_ref<const std::string&>().empty()) {
            return error("the key has no non-empty string field \"", field, "\"");
          }
        }
        out.client_email = member(*doc, "client_email")->get<std::string>();
        out.private_key_pem = member(*doc, "private_key")->get<std::string>();
        if (const Json* uri = member(*doc, "token_uri"); uri != nullptr) {
          if (!uri->is_string() || uri->get_ref<const std::string&>().empty()) {
            return error("the key's \"token_uri\" is not a non-empty string");
          }
          out.token_uri = uri->get<std::string>();
        }
        return out;
      });
  if (!key.ok()) return key.status().with_context(path);
  return key;
}

}  // namespace ic
