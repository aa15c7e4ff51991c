// The HTTPS path of one-shot kv without sockets: the request it sends (the
// key and value as base64, the write's session), how it reads an answer, and
// which answers it keeps and which it leaves to another member or the CAF
// path.
#include "runtime/cli/kv_http.hpp"

#include "runtime/node/http_kv.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace conclave::cli::kv_http;

namespace {

/// The request line's target of `text`.
std::string target_of(const std::string& text) {
  auto a = text.find(' ');
  auto b = text.find(' ', a + 1);
  return text.substr(a + 1, b - a - 1);
}

} // namespace

TEST(kv_http, percent_encoding_leaves_only_unreserved_bytes) {
  EXPECT_EQ(percent_encode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(percent_encode("a/b+c=d&e f"), "a%2Fb%2Bc%3Dd%26e%20f");
  EXPECT_EQ(percent_encode(std::string{"\0\xff", 2}), "%00%FF");
}

TEST(kv_http, a_put_carries_its_session_and_base64_key_and_value) {
  request r;
  r.what = request::kind::put;
  r.collection = "c 1";
  r.key = "dir/k?";
  r.value = std::string{"v\0\xfe", 3};
  r.session = "abc";
  r.seq = 1;
  auto text = request_text(r, "127.0.0.1:8080");
  EXPECT_EQ(text.rfind("PUT ", 0), 0u);
  auto key64 = conclave::node::to_base64(r.key);
  EXPECT_EQ(target_of(text), "/v1/kv/" + percent_encode(key64)
                                 + "?encoding=base64&collection=c%201&session=abc&seq=1");
  EXPECT_NE(text.find("\r\nHost: 127.0.0.1:8080\r\n"), std::string::npos);
  auto body = text.substr(text.find("\r\n\r\n") + 4);
  EXPECT_NE(text.find("Content-Length: " + std::to_string(body.size()) + "\r\n"),
            std::string::npos);
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(conclave::node::from_base64(j["value"].get<std::string>()), r.value);

  r.what = request::kind::remove;
  text = request_text(r, "h:1");
  EXPECT_EQ(text.rfind("DELETE ", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\n\r\n"); // no body

  request g;
  g.key = "k";
  text = request_text(g, "h:1");
  EXPECT_EQ(text.rfind("GET ", 0), 0u);
  EXPECT_EQ(target_of(text).find("session"), std::string::npos); // reads carry none
}

TEST(kv_http, answers_are_complete_only_with_all_their_body) {
  std::string a = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  "content-length:  7 \r\n\r\n{\"a\":1}";
  response r;
  for (size_t n = 0; n < a.size(); ++n)
    EXPECT_EQ(parse_response(a.substr(0, n), r), parse_state::incomplete) << n;
  ASSERT_EQ(parse_response(a, r), parse_state::done);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"a\":1}");

  EXPECT_EQ(parse_response("SSH-2.0-x\r\n\r\n", r), parse_state::bad);
  EXPECT_EQ(parse_response("HTTP/1.1 200 OK\r\n\r\n", r), parse_state::bad); // no length
  EXPECT_EQ(parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", r),
            parse_state::bad);
  EXPECT_EQ(parse_response("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", r),
            parse_state::bad);
  EXPECT_EQ(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", r, 10),
            parse_state::bad);
  EXPECT_EQ(parse_response(std::string(70000, 'x'), r), parse_state::bad);
}

TEST(kv_http, only_success_and_an_absent_key_are_kept) {
  request put;
  put.what = request::kind::put;
  auto v = judge(put, {200, R"({"lsn":42,"node":3})"}, false);
  EXPECT_EQ(v.what, verdict::kind::ok);
  EXPECT_EQ(v.output, "ok lsn 42");
  EXPECT_EQ(v.primary, 3u);
  v = judge(put, {200, R"({"lsn":42,"node":3})"}, true);
  EXPECT_EQ(nlohmann::json::parse(v.output), (nlohmann::json{{"node", 3}, {"lsn", 42}}));
  EXPECT_EQ(judge(put, {200, R"({"node":3})"}, false).what, verdict::kind::retry);

  request get;
  v = judge(get,
            {200, R"({"key":"aw==","value":")" + conclave::node::to_base64("x\ny") + R"(",
                     "node":2})"},
            false);
  EXPECT_EQ(v.what, verdict::kind::ok);
  EXPECT_EQ(v.output, "x\ny");
  EXPECT_EQ(judge(get, {200, R"({"value":"not base64!"})"}, false).what,
            verdict::kind::retry);
  EXPECT_EQ(judge(get, {404, R"({"error":"no such key","key":"aw=="})"}, false).what,
            verdict::kind::not_found);

  // Refusals, a store client not running, unknown outcomes, odd answers: the
  // next member or the CAF path answers (with the CAF path's own errors).
  for (auto& a :
       std::vector<response>{{404, R"({"error":"not found"})"},
                             {400, R"({"error":"bad"})"},
                             {403, R"({"error":"PUT needs a client certificate"})"},
                             {409, R"({"error":"wrong_kind"})"},
                             {503, R"({"error":"starting"})"},
                             {504, R"({"error":"outcome unknown"})"},
                             {200, "<html>"}}) {
    EXPECT_EQ(judge(put, a, false).what, verdict::kind::retry) << a.status << a.body;
    EXPECT_FALSE(judge(put, a, false).problem.empty());
  }
  EXPECT_EQ(judge(put, {404, R"({"error":"no such key"})"}, false).what,
            verdict::kind::retry);
}

TEST(kv_http, session_ids_are_random_hex) {
  auto a = random_session_id();
  auto b = random_session_id();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}
