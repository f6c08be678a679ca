#include "io/gcs_auth.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "io/file_system.h"
#include "io/gcs_json.h"
#include "io/http_client.h"

namespace ic {
namespace {

constexpr char kScope[] = "https://www.googleapis.com/auth/devstorage.read_write";
// Refresh this long before a token expires, so that no request goes out with a stale one.
constexpr std::chrono::minutes kRefreshMargin{5};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

Result<std::string> rs256_sign(const std::string& pem, const std::string& data) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return error("cannot read the private key");
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return error("the private_key is not a PEM private key");
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSignUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestSignFinal(ctx.get(), nullptr, &length) != 1) {
    return error("signing with the private key failed");
  }
  std::string signature(length, '\0');
  if (EVP_DigestSignFinal(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length) !=
      1) {
    return error("signing with the private key failed");
  }
  signature.resize(length);
  return signature;
}

// A bearer token and when it stops being good.
struct Token {
  std::string value;
  std::chrono::steady_clock::time_point expires;
};

// Parses an OAuth token response ({"access_token": …, "expires_in": …}); errors quote
// neither the body nor the token.
Result<Token> parse_token_response(const HttpResponse& response, const std::string& source) {
  if (response.status != 200) {
    return error("getting an access token from ", source, " failed: HTTP ", response.status);
  }
  Result<TokenResponse> parsed = parse_token_response_body(response.body);
  if (!parsed.ok()) return parsed.status().with_context("getting an access token from " + source);
  return Token{std::move(parsed->access_token),
               std::chrono::steady_clock::now() + std::chrono::seconds(parsed->expires_in_seconds)};
}

// A token source that caches what `fetch` gets and fetches again near expiry.
class CachingTokenSource : public TokenSource {
 public:
  Result<std::optional<std::string>> authorization_header() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!token_ || std::chrono::steady_clock::now() + kRefreshMargin >= token_->expires) {
      IC_ASSIGN_OR_RETURN(Token fresh, fetch());
      token_ = std::move(fresh);
    }
    return std::optional<std::string>("Authorization: Bearer " + token_->value);
  }

 protected:
  virtual Result<Token> fetch() = 0;

 private:
  std::mutex mutex_;
  std::optional<Token> token_;
};

class NoCredentials final : public TokenSource {
 public:
  Result<std::optional<std::string>> authorization_header() override {
    return std::optional<std::string>();
  }
  std::string describe() const override { return "no credentials (STORAGE_EMULATOR_HOST)"; }
};

class ServiceAccountSource final : public CachingTokenSource {
 public:
  ServiceAccountSource(ServiceAccountKey key, std::string path)
      : key_(std::move(key)), path_(std::move(path)) {}
  std::string describe() const override {
    return "service account " + key_.client_email + " (" + path_ + ")";
  }

 protected:
  Result<Token> fetch() override {
    IC_ASSIGN_OR_RETURN(const std::string assertion, make_jwt_assertion(key_, kScope, unix_now()));
    const std::string body =
        "grant_type=" + percent_encode("urn:ietf:params:oauth:grant-type:jwt-bearer") +
        "&assertion=" + assertion;
    IC_ASSIGN_OR_RETURN(const HttpResponse response,
                        http_send_with_retries(
                            [&] {
                              HttpRequest r;
                              r.method = "POST";
                              r.url = key_.token_uri;
                              r.headers = {"Content-Type: application/x-www-form-urlencoded"};
                              r.body = body;
                              r.timeout = std::chrono::seconds(30);
                              return r;
                            },
                            "token endpoint " + key_.token_uri, storage_retry_policy()));
    return parse_token_response(response, key_.token_uri);
  }

 private:
  ServiceAccountKey key_;
  std::string path_;
};

// Off Google Cloud the metadata server does not exist: give up after a few quick tries.
RetryPolicy metadata_policy() {
  RetryPolicy policy = storage_retry_policy();
  policy.max_attempts = std::min(policy.max_attempts, 3);
  return policy;
}

class MetadataServerSource final : public CachingTokenSource {
 public:
  explicit MetadataServerSource(std::string host) : host_(std::move(host)) {}
  std::string describe() const override { return "the GCE metadata server at " + host_; }

 protected:
  Result<Token> fetch() override {
    const std::string url =
        "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
    const Result<HttpResponse> response = http_send_with_retries(
        [&] {
          HttpRequest r;
          r.url = url;
          r.headers = {"Metadata-Flavor: Google"};
          r.timeout = std::chrono::seconds(10);
          return r;
        },
        "the GCE metadata server", metadata_policy());
    Result<Token> token = response.ok() ? parse_token_response(*response, "the GCE metadata server")
                                        : Result<Token>(response.status());
    if (!token.ok()) {
      return token.status().with_context(
          "no credentials (set GOOGLE_APPLICATION_CREDENTIALS to a service-account key, run on "
          "Google Cloud, or set STORAGE_EMULATOR_HOST for an emulator)");
    }
    return token;
  }

 private:
  std::string host_;
};

Result<std::string> read_local_key_file(const std::string& path) {
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, local_file_system().open_read(path));
  if (file->size() > (uint64_t{1} << 20)) return error(path, ": too large for a key file");
  std::string text(file->size(), '\0');
  IC_RETURN_IF_ERROR(file->read(0, text.size(), text.data()));
  return text;
}

}  // namespace

// parse_service_account_key is in gcs_json.cc, with the other parsers of outside JSON.

Result<std::string> make_jwt_assertion(const ServiceAccountKey& key, const std::string& scope,
                                       int64_t issued_at) {
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  const nlohmann::json claims = {{"iss", key.client_email},
                                 {"scope", scope},
                                 {"aud", key.token_uri},
                                 {"iat", issued_at},
                                 {"exp", issued_at + 3600}};
  const std::string signing_input = base64url(header.dump()) + "." + base64url(claims.dump());
  Result<std::string> signature = rs256_sign(key.private_key_pem, signing_input);
  if (!signature.ok()) {
    return signature.status().with_context("service account " + key.client_email);
  }
  return signing_input + "." + base64url(*signature);
}

Result<std::unique_ptr<TokenSource>> make_token_source_from_environment() {
  if (const char* emulator = std::getenv("STORAGE_EMULATOR_HOST"); emulator && *emulator) {
    return std::unique_ptr<TokenSource>(std::make_unique<NoCredentials>());
  }
  if (const char* path = std::getenv("GOOGLE_APPLICATION_CREDENTIALS"); path && *path) {
    // A key file is local by nature (and reading it from a bucket would need credentials).
    Result<std::string> text = read_local_key_file(path);
    if (!text.ok()) return text.status().with_context("GOOGLE_APPLICATION_CREDENTIALS");
    IC_ASSIGN_OR_RETURN(ServiceAccountKey key, parse_service_account_key(*text, path));
    return std::unique_ptr<TokenSource>(
        std::make_unique<ServiceAccountSource>(std::move(key), path));
  }
  const char* host = std::getenv("GCE_METADATA_HOST");
  return std::unique_ptr<TokenSource>(
      std::make_unique<MetadataServerSource>(host && *host ? host : "metadata.google.internal"));
}

}  // namespace ic
