// The parser against RFC 9112's framing rules: what it accepts, each way a head or a body is
// refused and with which status, byte-at-a-time feeding, pipelining, and its memory bound.
#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace ic::http {
namespace {

RequestParser parse_all(const std::string& bytes, size_t* used = nullptr,
                        ParserLimits limits = {}) {
  RequestParser parser(limits);
  const size_t n = parser.feed(bytes);
  if (used) *used = n;
  return parser;
}

TEST(RequestParser, AGetWithHeaders) {
  const RequestParser p =
      parse_all("GET /v1/models/m?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  value with space \r\n\r\n");
  ASSERT_EQ(p.state(), RequestParser::State::complete) << p.error_message();
  EXPECT_EQ(p.request().method, "GET");
  EXPECT_EQ(p.request().target, "/v1/models/m?x=1");
  EXPECT_EQ(p.request().path(), "/v1/models/m");
  EXPECT_EQ(p.request().header("x-thing"), "value with space");
  EXPECT_TRUE(p.request().keep_alive);
}

TEST(RequestParser, APostWithALengthAndAChunkedOne) {
  RequestParser p = parse_all("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_EQ(p.state(), RequestParser::State::complete) << p.error_message();
  EXPECT_EQ(p.request().body, "hello");
  p = parse_all(
      "POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n");
  ASSERT_EQ(p.state(), RequestParser::State::complete) << p.error_message();
  EXPECT_EQ(p.request().body, "hello world");
  EXPECT_EQ(p.declared_length(), -1);
}

TEST(RequestParser, ByteAtATimeGivesTheSameRequest) {
  const std::string bytes =
      "\r\nPOST /p HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n";
  RequestParser p(ParserLimits{});
  for (char c : bytes) {
    ASSERT_EQ(p.feed(std::string(1, c)), 1u);
  }
  ASSERT_EQ(p.state(), RequestParser::State::complete) << p.error_message();
  EXPECT_EQ(p.request().body, "abc");
}

TEST(RequestParser, StopsAtTheEndOfARequestSoPipelinedBytesStay) {
  const std::string first = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string second = "GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
  size_t used = 0;
  RequestParser p = parse_all(first + second, &used);
  EXPECT_EQ(used, first.size());
  EXPECT_EQ(p.request().target, "/a");
  p.reset();
  EXPECT_EQ(p.feed(second), second.size());
  EXPECT_EQ(p.request().target, "/b");
}

TEST(RequestParser, ConnectionCloseAndHttp10) {
  EXPECT_FALSE(
      parse_all("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").request().keep_alive);
  EXPECT_FALSE(parse_all("GET / HTTP/1.0\r\n\r\n").request().keep_alive);
  EXPECT_TRUE(parse_all("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request().keep_alive);
}

TEST(RequestParser, ExpectContinueIsReportedBeforeTheBody) {
  RequestParser p =
      parse_all("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(p.state(), RequestParser::State::reading_body);
  EXPECT_TRUE(p.head_complete());
  EXPECT_TRUE(p.expects_continue());
  EXPECT_EQ(p.declared_length(), 3);
}

struct Refusal {
  const char* what;
  std::string bytes;
  int status;
};

class Refused : public ::testing::TestWithParam<Refusal> {};

TEST_P(Refused, WithItsStatus) {
  const RequestParser p = parse_all(GetParam().bytes, nullptr, ParserLimits{8 << 10, 100, 1000});
  ASSERT_EQ(p.state(), RequestParser::State::failed) << GetParam().what;
  EXPECT_EQ(p.error_status(), GetParam().status) << p.error_message();
  EXPECT_FALSE(p.error_message().empty());
}

const std::string kHead = "POST /p HTTP/1.1\r\nHost: a\r\n";

INSTANTIATE_TEST_SUITE_P(
    Rfc9112, Refused,
    ::testing::Values(
        Refusal{"no colon", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400},
        Refusal{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  b\r\n\r\n", 400},
        Refusal{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
        Refusal{"bad name character", "GET / HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n", 400},
        Refusal{"control in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", 400},
        Refusal{"bare CR", "GET / HTTP/1.1\r\nHost: a\rX: 1\r\n\r\n", 400},
        Refusal{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
        Refusal{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        Refusal{"bad request line", "GET /\r\nHost: a\r\n\r\n", 400},
        Refusal{"space in target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        Refusal{"not HTTP", "GET / FTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"conflicting lengths", kHead + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                400},
        Refusal{"a list of lengths", kHead + "Content-Length: 1,2\r\n\r\nab", 400},
        Refusal{"a signed length", kHead + "Content-Length: +5\r\n\r\nhello", 400},
        Refusal{"a negative length", kHead + "Content-Length: -1\r\n\r\n", 400},
        Refusal{"an empty length", kHead + "Content-Length: \r\n\r\n", 400},
        Refusal{"an overflowing length", kHead + "Content-Length: 99999999999999999999999\r\n\r\n",
                400},
        Refusal{"a length over the limit", kHead + "Content-Length: 1001\r\n\r\n", 413},
        Refusal{"length and chunked",
                kHead + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        Refusal{"gzip coding", kHead + "Transfer-Encoding: gzip\r\n\r\n", 501},
        Refusal{"a POST without a length", kHead + "\r\n", 411},
        Refusal{"a bad chunk size", kHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        Refusal{"an overflowing chunk size",
                kHead + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400},
        Refusal{"chunk data longer than its size",
                kHead + "Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400},
        Refusal{"a chunked body over the limit",
                kHead + "Transfer-Encoding: chunked\r\n\r\n3e9\r\n", 413},
        Refusal{"an unknown expectation", kHead + "Content-Length: 1\r\nExpect: x\r\n\r\n", 417},
        Refusal{"a head over 8 KiB",
                "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", 431},
        Refusal{"too many header lines",
                [] {
                  std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
                  for (int i = 0; i < 120; ++i) s += "X" + std::to_string(i) + ": 1\r\n";
                  return s + "\r\n";
                }(),
                431}),
    [](const ::testing::TestParamInfo<Refusal>& info) {
      std::string name;
      for (const char* c = info.param.what; *c; ++c) name += std::isalnum(*c) ? *c : '_';
      return name;
    });

// A header line with no end: refused at the limit, having taken only limit + 1 bytes.
TEST(RequestParser, AnEndlessHeaderLineIsRefusedWithinTheLimit) {
  RequestParser p(ParserLimits{});
  const std::string chunk(4096, 'a');
  size_t fed = p.feed("GET / HTTP/1.1\r\nHost: a\r\nX: ");
  for (int i = 0; i < 8192 && p.state() == RequestParser::State::reading_head; ++i) {
    fed += p.feed(chunk);
  }
  EXPECT_EQ(p.state(), RequestParser::State::failed);
  EXPECT_EQ(p.error_status(), 431);
  EXPECT_LE(fed, (8u << 10) + 1);
}

}  // namespace
}  // namespace ic::http
