#include "runtime/node/http_routes.hpp"

#include "runtime/node/http_jobs.hpp"
#include "runtime/node/http_kv.hpp"
#include "runtime/node/http_leases.hpp"

#include <charconv>

namespace conclave::node {

bool is_write(const std::string& method) {
  return method == "PUT" || method == "POST" || method == "DELETE" || method == "PATCH";
}

bool write_authorized(const http_request& req) {
  return !req.tls || !is_write(req.method) || req.client_verified;
}

std::optional<uint64_t> query_number(const http_request& req, const std::string& name,
                                     uint64_t fallback, uint64_t min, uint64_t max) {
  auto i = req.query.find(name);
  if (i == req.query.end() || i->second.empty())
    return fallback;
  uint64_t v = 0;
  auto& s = i->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < min || v > max)
    return std::nullopt;
  return v;
}

http_response route_request(const http_request& req, const http_view& v,
                            const http_backends& b) {
  if (!write_authorized(req))
    return http_error(403, req.method
                               + " needs a client certificate signed by the "
                                 "cluster's CA (reads do not)");
  if (auto r = handle_kv(req, b.kv.get()))
    return *r;
  if (auto r = handle_leases(req, b.kv.get()))
    return *r;
  if (auto r = handle_jobs(req, b.jobs.get(), b.kv.get()))
    return *r;
  return handle_http(req, v);
}

} // namespace conclave::node
