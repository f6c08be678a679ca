// The Cloud Storage client's pieces that need no bucket: URL and percent-encoding, gs:// name
// parsing, JWT assembly (signed with a key made here and verified with its public half), the
// retry policy, and retries against a real HTTP server on loopback that fails on purpose.
#include "io/gcs_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "io/gcs_auth.h"
#include "io/http_client.h"

namespace ic {
namespace {

std::string base64url_decode(const std::string& text) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '-') v = 62;
    if (c == '_') v = 63;
    if (v < 0) return "<bad base64url>";
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

TEST(GcsClientTest, PercentEncodingKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(percent_encode("model/model.ckpt-5.index"), "model%2Fmodel.ckpt-5.index");
  EXPECT_EQ(percent_encode("a b+c~d_e"), "a%20b%2Bc~d_e");
  EXPECT_EQ(percent_encode("\xc3\xa9?&="), "%C3%A9%3F%26%3D");
  EXPECT_EQ(percent_encode(""), "");
}

TEST(GcsClientTest, Base64UrlHasNoPaddingAndRoundTrips) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
  const std::string all = [] {
    std::string s;
    for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
    return s;
  }();
  EXPECT_EQ(base64url_decode(base64url(all)), all);
}

TEST(GcsClientTest, UrlsEncodeObjectNames) {
  GcsClient client("http://127.0.0.1:9", nullptr, RetryPolicy());
  const GcsObjectName name{"bkt", "dir/a b.txt"};
  EXPECT_EQ(name.url(), "gs://bkt/dir/a b.txt");
  EXPECT_EQ(client.object_url(name), "http://127.0.0.1:9/storage/v1/b/bkt/o/dir%2Fa%20b.txt");
  EXPECT_EQ(client.media_upload_url(name, "media"),
            "http://127.0.0.1:9/upload/storage/v1/b/bkt/o?uploadType=media&name=dir%2Fa%20b.txt");
  EXPECT_EQ(client.list_url("bkt", "dir/", "/", "tok=1", 0),
            "http://127.0.0.1:9/storage/v1/b/bkt/o?prefix=dir%2F&delimiter=%2F&pageToken=tok%3D1");
  EXPECT_EQ(client.list_url("bkt", "", "", "", 1),
            "http://127.0.0.1:9/storage/v1/b/bkt/o?prefix=&maxResults=1");
}

TEST(GcsClientTest, ParsesGsUrls) {
  const Result<GcsObjectName> name = parse_gcs_url("gs://my-bucket/a/b/c");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->bucket, "my-bucket");
  EXPECT_EQ(name->object, "a/b/c");
  EXPECT_EQ(parse_gcs_url("gs://b")->object, "");
  EXPECT_FALSE(parse_gcs_url("gs:///x").ok());
  EXPECT_FALSE(parse_gcs_url("gs://bad bucket/x").ok());
  EXPECT_FALSE(parse_gcs_url("s3://b/x").ok());
}

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

std::string private_key_pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* pem_data = nullptr;
  const long pem_size = BIO_get_mem_data(bio.get(), &pem_data);
  return std::string(pem_data, static_cast<size_t>(pem_size));
}

TEST(GcsAuthTest, JwtIsSignedWithTheServiceAccountKey) {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_RSA_gen(2048));
  ASSERT_TRUE(key);
  const std::string pem = private_key_pem(key.get());

  const std::string json = nlohmann::json{{"type", "service_account"},
                                          {"client_email", "trainer@project.iam.example"},
                                          {"private_key", pem},
                                          {"token_uri", "http://127.0.0.1:1/token"}}
                               .dump();
  const Result<ServiceAccountKey> parsed = parse_service_account_key(json, "key.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->token_uri, "http://127.0.0.1:1/token");

  const Result<std::string> jwt = make_jwt_assertion(*parsed, "scope-x", 1700000000);
  ASSERT_TRUE(jwt.ok()) << jwt.status().message();
  const size_t dot1 = jwt->find('.');
  const size_t dot2 = jwt->find('.', dot1 + 1);
  ASSERT_NE(dot2, std::string::npos);
  const nlohmann::json header = nlohmann::json::parse(base64url_decode(jwt->substr(0, dot1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["typ"], "JWT");
  const nlohmann::json claims =
      nlohmann::json::parse(base64url_decode(jwt->substr(dot1 + 1, dot2 - dot1 - 1)));
  EXPECT_EQ(claims["iss"], "trainer@project.iam.example");
  EXPECT_EQ(claims["scope"], "scope-x");
  EXPECT_EQ(claims["aud"], "http://127.0.0.1:1/token");
  EXPECT_EQ(claims["iat"], 1700000000);
  EXPECT_EQ(claims["exp"], 1700003600);

  // The signature verifies with the public key over "header.claims", and not over other bytes.
  const std::string signing_input = jwt->substr(0, dot2);
  const std::string signature = base64url_decode(jwt->substr(dot2 + 1));
  auto verify = [&](const std::string& data) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get());
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                            signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                            data.size());
  };
  EXPECT_EQ(verify(signing_input), 1);
  EXPECT_NE(verify(signing_input + "x"), 1);
}

TEST(GcsAuthTest, BadKeysAreErrorsThatNeverQuoteTheKey) {
  const std::string secret = "-----BEGIN PRIVATE KEY-----\nnot-really-a-key\n";
  const std::string json = nlohmann::json{
      {"type", "service_account"},
      {"client_email", "a@b"},
      {"private_key", secret}}.dump();
  const Result<ServiceAccountKey> key = parse_service_account_key(json, "key.json");
  ASSERT_TRUE(key.ok());
  const Result<std::string> jwt = make_jwt_assertion(*key, "s", 0);
  ASSERT_FALSE(jwt.ok());
  EXPECT_EQ(jwt.status().message().find("not-really-a-key"), std::string::npos);
  EXPECT_FALSE(parse_service_account_key("{\"type\": \"authorized_user\"}", "k.json").ok());
  EXPECT_FALSE(parse_service_account_key("not json", "k.json").ok());
}

TEST(RetryPolicyTest, BackoffGrowsIsBoundedAndJittered) {
  RetryPolicy p;
  p.initial_delay = std::chrono::milliseconds(100);
  p.max_delay = std::chrono::milliseconds(1000);
  const uint64_t max_bits = ~uint64_t{0};
  for (int retry = 1; retry <= 10; ++retry) {
    const int64_t cap = std::min<int64_t>(1000, int64_t{100} << (retry - 1));
    for (uint64_t bits : {uint64_t{0}, uint64_t{12345}, max_bits}) {
      const auto d = p.delay_before_retry(retry, bits).count();
      EXPECT_GE(d, 0);
      EXPECT_LE(d, cap) << "retry " << retry;
    }
  }
  // Jitter: different random bits give different delays.
  EXPECT_NE(p.delay_before_retry(3, 1).count(), p.delay_before_retry(3, 250).count());
  EXPECT_TRUE(RetryPolicy::retryable_status(503));
  EXPECT_TRUE(RetryPolicy::retryable_status(429));
  EXPECT_TRUE(RetryPolicy::retryable_status(500));
  EXPECT_TRUE(RetryPolicy::retryable_status(408));
  EXPECT_FALSE(RetryPolicy::retryable_status(404));
  EXPECT_FALSE(RetryPolicy::retryable_status(403));
  EXPECT_FALSE(RetryPolicy::retryable_status(200));
}

// A loopback HTTP server that answers the first `failures` requests with 503 (or by closing
// the connection unanswered) and the rest with 200 and `success_body`, or with what
// `responder` makes of the request (a whole HTTP response).
using Responder = std::function<std::string(const std::string& request)>;
class FlakyServer {
 public:
  FlakyServer(int failures, bool reset_instead, std::string success_body = "ok",
              Responder responder = nullptr)
      : failures_(failures),
        reset_(reset_instead),
        success_body_(std::move(success_body)),
        responder_(std::move(responder)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~FlakyServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string url() const { return base() + "/o"; }
  int requests() const { return requests_; }
  std::string last_request() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_request_;
  }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      // The body, when a Content-Length says there is one.
      const size_t length_at = request.find("Content-Length: ");
      const size_t body_at = request.find("\r\n\r\n");
      if (length_at != std::string::npos && body_at != std::string::npos) {
        const size_t want = body_at + 4 + std::stoul(request.substr(length_at + 16));
        while (request.size() < want) {
          const ssize_t n = ::read(c, buf, sizeof(buf));
          if (n <= 0) break;
          request.append(buf, static_cast<size_t>(n));
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last_request_ = request;
      }
      const int index = requests_++;
      if (index < failures_ && reset_) {
        ::close(c);
        continue;
      }
      const std::string reply =
          index >= failures_ && responder_ ? responder_(request)
          : index < failures_
              ? "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
              : "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(success_body_.size()) +
                    "\r\nConnection: close\r\n\r\n" + success_body_;
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  int failures_;
  bool reset_;
  std::string success_body_;
  Responder responder_;
  std::mutex mutex_;
  std::string last_request_;
  std::atomic<int> requests_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

RetryPolicy fast_policy(int attempts) {
  RetryPolicy p;
  p.max_attempts = attempts;
  p.initial_delay = std::chrono::milliseconds(1);
  p.max_delay = std::chrono::milliseconds(5);
  return p;
}

TEST(HttpRetryTest, RetriesRecoverFrom503sAndDroppedConnections) {
  for (const bool reset : {false, true}) {
    FlakyServer server(2, reset);
    HttpRequest request;
    request.url = server.url();
    const Result<HttpResponse> response =
        http_send_with_retries([&] { return request; }, "gs://bkt/object", fast_policy(4));
    ASSERT_TRUE(response.ok()) << response.status().message();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ok");
    EXPECT_EQ(server.requests(), 3);
  }
}

TEST(HttpRetryTest, AFailureThatOutlastsTheRetriesNamesTheObject) {
  FlakyServer server(100, true);
  HttpRequest request;
  request.url = server.url();
  const Result<HttpResponse> response =
      http_send_with_retries([&] { return request; }, "gs://bkt/model/checkpoint", fast_policy(3));
  ASSERT_FALSE(response.ok());
  EXPECT_NE(response.status().message().find("gs://bkt/model/checkpoint"), std::string::npos)
      << response.status().message();
  EXPECT_EQ(server.requests(), 3);
  // A 503 on every attempt comes back as the last answer, for the caller to describe.
  FlakyServer unavailable(100, false);
  request.url = unavailable.url();
  const Result<HttpResponse> last =
      http_send_with_retries([&] { return request; }, "gs://bkt/x", fast_policy(2));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->status, 503);
  EXPECT_EQ(unavailable.requests(), 2);
}

// GOOGLE_APPLICATION_CREDENTIALS end to end against a token endpoint on loopback: the JWT
// assertion is posted, the token comes back as a bearer header, is cached while fresh, and is
// fetched again when it is within the refresh margin of expiring.
TEST(GcsAuthTest, ServiceAccountTokensAreExchangedCachedAndRefreshed) {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_RSA_gen(2048));
  ASSERT_TRUE(key);
  for (const int expires_in : {3600, 60}) {
    FlakyServer token_endpoint(
        0, false,
        "{\"access_token\": \"tok-123\", \"expires_in\": " + std::to_string(expires_in) + "}");
    const std::string key_path =
        ::testing::TempDir() + "/ic_key_" + std::to_string(::getpid()) + ".json";
    std::ofstream(key_path) << nlohmann::json{
        {"type", "service_account"},
        {"client_email", "a@b.example"},
        {"private_key", private_key_pem(key.get())},
        {"token_uri",
         token_endpoint.url()}}.dump();
    ::unsetenv("STORAGE_EMULATOR_HOST");
    ::setenv("GOOGLE_APPLICATION_CREDENTIALS", key_path.c_str(), 1);
    Result<std::unique_ptr<TokenSource>> source = make_token_source_from_environment();
    ::unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    ASSERT_TRUE(source.ok()) << source.status().message();
    EXPECT_EQ((*source)->describe().find("BEGIN"), std::string::npos);
    for (int call = 0; call < 2; ++call) {
      Result<std::optional<std::string>> header = (*source)->authorization_header();
      ASSERT_TRUE(header.ok()) << header.status().message();
      ASSERT_TRUE(header->has_value());
      EXPECT_EQ(**header, "Authorization: Bearer tok-123");
    }
    // A token good for an hour is fetched once; one expiring within the margin every time.
    EXPECT_EQ(token_endpoint.requests(), expires_in == 3600 ? 1 : 2);
    const std::string posted = token_endpoint.last_request();
    EXPECT_NE(posted.find("POST /o "), std::string::npos) << posted;
    EXPECT_NE(posted.find("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
                          "&assertion="),
              std::string::npos)
        << posted;
    std::remove(key_path.c_str());
  }
}

std::string http_response(int status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" +
         extra + "\r\n" + body;
}

std::unique_ptr<GcsClient> client_for(const FlakyServer& server) {
  ::setenv("STORAGE_EMULATOR_HOST", server.base().c_str(), 1);
  Result<std::unique_ptr<TokenSource>> none = make_token_source_from_environment();
  ::unsetenv("STORAGE_EMULATOR_HOST");
  return std::make_unique<GcsClient>(server.base(), std::move(none).value(), fast_policy(3));
}

TEST(GcsClientTest, ListingFollowsEveryPage) {
  FlakyServer server(1, false, "", [](const std::string& request) {
    EXPECT_NE(request.find("GET /storage/v1/b/bkt/o?prefix=d%2F&delimiter=%2F"), std::string::npos)
        << request;
    if (request.find("pageToken=p2") != std::string::npos) {
      return http_response(200, R"({"items": [{"name": "d/c"}], "prefixes": ["d/sub/"]})");
    }
    return http_response(200, R"({"items": [{"name": "d/a"}, {"name": "d/b"}],
                                  "nextPageToken": "p2"})");
  });
  const Result<GcsListing> listing = client_for(server)->list("bkt", "d/", "/");
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  EXPECT_EQ(listing->objects, (std::vector<std::string>{"d/a", "d/b", "d/c"}));
  EXPECT_EQ(listing->prefixes, (std::vector<std::string>{"d/sub/"}));
  EXPECT_EQ(server.requests(), 3);  // a 503, then two pages
}

TEST(GcsClientTest, RangedReadsAndMetadata) {
  FlakyServer server(0, false, "", [](const std::string& request) {
    if (request.find("alt=media&generation=7") != std::string::npos) {
      EXPECT_NE(request.find("Range: bytes=5-9"), std::string::npos) << request;
      return http_response(206, "56789");
    }
    if (request.find("/o/missing") != std::string::npos) {
      return http_response(404, R"({"error": {"code": 404, "message": "No such object"}})");
    }
    return http_response(200, R"({"name": "a/b", "size": "10", "generation": "7"})");
  });
  std::unique_ptr<GcsClient> client = client_for(server);
  const GcsObjectName name{"bkt", "a/b"};
  const Result<std::optional<GcsObjectInfo>> info = client->stat(name);
  ASSERT_TRUE(info.ok()) << info.status().message();
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->size, 10u);
  EXPECT_EQ((*info)->generation, "7");
  char out[5];
  ASSERT_TRUE(client->read(name, "7", 5, 5, out).ok());
  EXPECT_EQ(std::string(out, 5), "56789");
  const Result<std::optional<GcsObjectInfo>> missing = client->stat({"bkt", "missing"});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  const Status gone = client->read({"bkt", "missing"}, "", 0, 3, out);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("gs://bkt/missing"), std::string::npos) << gone.message();
}

TEST(GcsAuthTest, TheEmulatorNeedsNoCredentials) {
  ::setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1", 1);
  Result<std::unique_ptr<TokenSource>> source = make_token_source_from_environment();
  ::unsetenv("STORAGE_EMULATOR_HOST");
  ASSERT_TRUE(source.ok());
  Result<std::optional<std::string>> header = (*source)->authorization_header();
  ASSERT_TRUE(header.ok());
  EXPECT_FALSE(header->has_value());
}

}  // namespace
}  // namespace ic
