// The gs:// code's parsers of outside JSON (io/gcs_json): valid bodies, wrong types, missing
// fields, hostile numbers; none throws and no error quotes a token or a key.
#include "io/gcs_json.h"

#include <gtest/gtest.h>

#include <string>

#include "io/gcs_auth.h"

namespace ic {
namespace {

constexpr char kSecret[] = "ya29.SECRET-token-value";

TEST(GcsJsonTest, DecimalUint64IsDigitsOnlyAndOverflowChecked) {
  uint64_t v = 7;
  EXPECT_TRUE(parse_decimal_uint64("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parse_decimal_uint64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "abc", "1e3", "18446744073709551616",
                          "99999999999999999999999", "0x10", "1.5"}) {
    EXPECT_FALSE(parse_decimal_uint64(bad, &v)) << bad;
  }
}

TEST(GcsJsonTest, TokenResponses) {
  Result<TokenResponse> t =
      parse_token_response_body(std::string("{\"access_token\":\"") + kSecret +
                                "\",\"expires_in\":3599,\"token_type\":\"Bearer\"}");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->access_token, kSecret);
  EXPECT_EQ(t->expires_in_seconds, 3599);
  // Absent: an hour. A string of digits is accepted. Out-of-range values are clamped.
  EXPECT_EQ(parse_token_response_body("{\"access_token\":\"a\"}")->expires_in_seconds, 3600);
  EXPECT_EQ(parse_token_response_body("{\"access_token\":\"a\",\"expires_in\":\"120\"}")
                ->expires_in_seconds,
            120);
  EXPECT_EQ(
      parse_token_response_body("{\"access_token\":\"a\",\"expires_in\":0}")->expires_in_seconds,
      kMinTokenLifetimeSeconds);
  EXPECT_EQ(parse_token_response_body("{\"access_token\":\"a\",\"expires_in\":31536000}")
                ->expires_in_seconds,
            kMaxTokenLifetimeSeconds);
}

TEST(GcsJsonTest, BadTokenResponsesAreErrorsThatNeverQuoteTheToken) {
  const std::string token = std::string("\"access_token\":\"") + kSecret + "\"";
  for (const std::string& body :
       {std::string("not json"), std::string("[1,2]"), std::string("{}"),
        std::string("{\"access_token\":5}"), std::string("{\"access_token\":\"\"}"),
        "{" + token + ",\"expires_in\":\"3600s\"}", "{" + token + ",\"expires_in\":1.5}",
        "{" + token + ",\"expires_in\":-1}", "{" + token + ",\"expires_in\":\"-1\"}",
        "{" + token + ",\"expires_in\":9223372036854775807}",
        "{" + token + ",\"expires_in\":18446744073709551615}",
        "{" + token + ",\"expires_in\":1e300}", "{" + token + ",\"expires_in\":{}}",
        "{" + token + ",\"expires_in\":null}", "{" + token + ",\"expires_in\":true}",
        "{" + token + ",\"expires_in\":\"99999999999999999999999\"}"}) {
    const Result<TokenResponse> t = parse_token_response_body(body);
    ASSERT_FALSE(t.ok()) << body;
    EXPECT_EQ(t.status().message().find("SECRET"), std::string::npos) << t.status().message();
  }
  EXPECT_NE(parse_token_response_body("{" + token + ",\"expires_in\":\"x\"}")
                .status()
                .message()
                .find("expires_in"),
            std::string::npos);
}

TEST(GcsJsonTest, ObjectMetadata) {
  Result<ObjectMetadata> m = parse_object_metadata_body(
      "{\"kind\":\"storage#object\",\"name\":\"a/b\",\"size\":\"1234\","
      "\"generation\":\"1700000000123456\"}");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->size, 1234u);
  EXPECT_EQ(m->generation, "1700000000123456");
  m = parse_object_metadata_body("{\"size\":18446744073709551615,\"generation\":17}");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->size, UINT64_MAX);
  EXPECT_EQ(m->generation, "17");
  m = parse_object_metadata_body("{\"size\":\"0\"}");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->size, 0u);
  EXPECT_EQ(m->generation, "");
  for (const char* bad :
       {"", "null", "[]", "{}", "{\"size\":\"abc\"}", "{\"size\":\"-1\"}", "{\"size\":-1}",
        "{\"size\":\"99999999999999999999999\"}", "{\"size\":1.5}", "{\"size\":{}}",
        "{\"size\":null}", "{\"size\":\"\"}", "{\"size\":\" 12\"}",
        "{\"size\":\"1\",\"generation\":{}}", "{\"size\":\"1\",\"generation\":\"g1\"}",
        "{\"size\":\"1\",\"generation\":-3}"}) {
    const Result<ObjectMetadata> r = parse_object_metadata_body(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(parse_object_metadata_body("{\"size\":\"abc\"}").status().message().find("size"),
            std::string::npos);
  EXPECT_NE(parse_object_metadata_body("{\"size\":1,\"generation\":[]}")
                .status()
                .message()
                .find("generation"),
            std::string::npos);
}

TEST(GcsJsonTest, ListingPages) {
  Result<ListingPage> p = parse_listing_body(
      "{\"kind\":\"storage#objects\",\"items\":[{\"name\":\"d/a\",\"size\":\"1\"},"
      "{\"name\":\"d/b\"}],\"prefixes\":[\"d/sub/\"],\"nextPageToken\":\"CgNkL2I=\"}");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->objects, (std::vector<std::string>{"d/a", "d/b"}));
  EXPECT_EQ(p->prefixes, (std::vector<std::string>{"d/sub/"}));
  EXPECT_EQ(p->next_page_token, "CgNkL2I=");
  p = parse_listing_body("{\"kind\":\"storage#objects\"}");  // an empty bucket
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->objects.empty() && p->prefixes.empty() && p->next_page_token.empty());
  for (const char* bad :
       {"x", "[]", "{\"items\":{}}", "{\"items\":[1]}", "{\"items\":[{}]}",
        "{\"items\":[{\"name\":3}]}", "{\"prefixes\":\"a/\"}", "{\"prefixes\":[null]}",
        "{\"nextPageToken\":1}", "{\"nextPageToken\":null}"}) {
    EXPECT_FALSE(parse_listing_body(bad).ok()) << bad;
  }
  EXPECT_NE(parse_listing_body("{\"nextPageToken\":[]}").status().message().find("nextPageToken"),
            std::string::npos);
}

TEST(GcsJsonTest, RewriteResponses) {
  Result<RewriteProgress> r = parse_rewrite_body(
      "{\"kind\":\"storage#rewriteResponse\",\"done\":false,\"rewriteToken\":\"tok\","
      "\"totalBytesRewritten\":\"1048576\"}");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->done);
  EXPECT_EQ(r->rewrite_token, "tok");
  r = parse_rewrite_body("{\"done\":true,\"resource\":{\"name\":\"x\"}}");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->done);
  EXPECT_TRUE(parse_rewrite_body("{}")->done);
  for (const char* bad :
       {"", "[]", "{\"done\":\"false\"}", "{\"done\":0}", "{\"done\":false}",
        "{\"done\":false,\"rewriteToken\":7}", "{\"done\":false,\"rewriteToken\":\"\"}"}) {
    EXPECT_FALSE(parse_rewrite_body(bad).ok()) << bad;
  }
  const Status s = parse_rewrite_body("{\"done\":false,\"rewriteToken\":[\"SECRET\"]}").status();
  EXPECT_NE(s.message().find("rewriteToken"), std::string::npos);
  EXPECT_EQ(s.message().find("SECRET"), std::string::npos);
}

TEST(GcsJsonTest, ErrorMessages) {
  EXPECT_EQ(error_message_of("{\"error\":{\"code\":403,\"message\":\"denied\"}}"), "denied");
  for (const char* none : {"", "<html>", "{}", "{\"error\":\"x\"}", "{\"error\":{\"message\":5}}",
                           "{\"error\":{}}", "[{\"error\":{\"message\":\"m\"}}]"}) {
    EXPECT_EQ(error_message_of(none), "") << none;
  }
}

TEST(GcsJsonTest, ServiceAccountKeysAreStrictAndNeverQuoted) {
  const std::string good =
      "{\"type\":\"service_account\",\"client_email\":\"sa@p.iam.gserviceaccount.com\","
      "\"private_key\":\"-----BEGIN PRIVATE KEY-----\\nSECRETKEY\\n-----END PRIVATE KEY-----\\n\","
      "\"token_uri\":\"http://127.0.0.1:1/token\"}";
  Result<ServiceAccountKey> key = parse_service_account_key(good, "key.json");
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(key->token_uri, "http://127.0.0.1:1/token");
  for (const char* bad :
       {"{\"type\":1,\"client_email\":\"e\",\"private_key\":\"SECRETKEY\"}",
        "{\"type\":\"service_account\",\"client_email\":[],\"private_key\":\"SECRETKEY\"}",
        "{\"type\":\"service_account\",\"client_email\":\"e\",\"private_key\":{\"k\":\"SECRETKEY\"}"
        "}",
        "{\"type\":\"service_account\",\"client_email\":\"e\",\"private_key\":\"\"}",
        "{\"type\":\"service_account\",\"client_email\":\"e\",\"private_key\":\"SECRETKEY\","
        "\"token_uri\":5}",
        "{\"type\":\"service_account\",\"client_email\":\"e\",\"private_key\":\"SECRETKEY\","
        "\"token_uri\":null}",
        "[\"SECRETKEY\"]"}) {
    const Result<ServiceAccountKey> k = parse_service_account_key(bad, "key.json");
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.status().message().rfind("key.json: ", 0), 0u) << k.status().message();
    EXPECT_EQ(k.status().message().find("SECRETKEY"), std::string::npos) << k.status().message();
  }
}

TEST(GcsJsonTest, DeepNestingAndHugeNumbersAreErrorsNotCrashes) {
  const std::string deep =
      "{\"items\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_FALSE(parse_listing_body(deep).ok());
  EXPECT_FALSE(parse_object_metadata_body("{\"size\":" + std::string(100000, '[') + "}").ok());
  EXPECT_FALSE(parse_token_response_body("{\"access_token\":\"a\",\"expires_in\":1" +
                                         std::string(400, '0') + "}")
                   .ok());
  EXPECT_FALSE(parse_object_metadata_body("{\"size\":1" + std::string(400, '0') + "}").ok());
}

TEST(GcsJsonTest, UploadRangeHeaders) {
  EXPECT_EQ(*parse_upload_range_header("bytes=0-262143", 1000000), 262144u);
  EXPECT_EQ(*parse_upload_range_header("bytes=0-0", 1000000), 0u);  // an emulator's "none yet"
  EXPECT_EQ(*parse_upload_range_header("bytes=0-999999", 1000000), 1000000u);
  for (const char* bad :
       {"", "bytes=0-", "bytes=0-abc", "bytes=0--1", "bytes=5-10", "0-10", "bytes=0-1000000",
        "bytes=0-18446744073709551615", "bytes=0-99999999999999999999999", "bytes=0-12 "}) {
    EXPECT_FALSE(parse_upload_range_header(bad, 1000000).ok()) << bad;
  }
}

}  // namespace
}  // namespace ic
