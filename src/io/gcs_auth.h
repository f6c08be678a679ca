// Credentials for Cloud Storage, found as Google's own clients find them:
//   STORAGE_EMULATOR_HOST set           no credentials (an emulator)
//   GOOGLE_APPLICATION_CREDENTIALS set  a service-account JSON key: an RS256-signed JWT
//                                       (OpenSSL) exchanged at its token_uri for a token
//   otherwise                           the GCE metadata server (GCE_METADATA_HOST overrides
//                                       metadata.google.internal)
// Tokens are cached and refreshed five minutes before they expire. No token, key or
// assertion ever appears in an error message or a log line.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/status.h"

namespace ic {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The "Authorization: Bearer …" header, or nullopt when requests go unauthenticated.
  virtual Result<std::optional<std::string>> authorization_header() = 0;
  virtual std::string describe() const = 0;  // for messages: where credentials come from
};

// The source the environment calls for (see above).
Result<std::unique_ptr<TokenSource>> make_token_source_from_environment();

// A service-account key's fields that signing needs.
struct ServiceAccountKey {
  std::string client_email;
  std::string private_key_pem;
  std::string token_uri = "https://oauth2.googleapis.com/token";
};
// Parses a service-account JSON key file's text; errors name `path` but never quote the key.
Result<ServiceAccountKey> parse_service_account_key(const std::string& json,
                                                    const std::string& path);
// The signed JWT assertion "header.claims.signature" (base64url) asking for `scope`, issued at
// `issued_at` (Unix seconds) for one hour.
Result<std::string> make_jwt_assertion(const ServiceAccountKey& key, const std::string& scope,
                                       int64_t issued_at);

}  // namespace ic
