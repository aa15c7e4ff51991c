#include "runtime/node/http_jobs.hpp"

#include "protocols/workflow/store_layout.hpp"
#include "runtime/cli/job_input.hpp"
#include "runtime/cli/job_output.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace conclave::node {

namespace rp = conclave::replication;
namespace wf = conclave::workflow;
using nlohmann::json;

namespace {

const std::string jobs_path = "/v1/jobs";

http_response jobs_answer(int status, const json& j) {
  return {status, cli::job::dump(j), "application/json"};
}

/// The HTTP answer to a call that gave no value.
template <class T>
http_response call_failed(const job_call<T>& c, const std::string& id, bool change) {
  if (c.timed_out)
    return http_error(504, change ? "outcome unknown: no answer in time; the change "
                                    "may or may not have taken effect ("
                                        + c.error + ")"
                                  : "no answer in time (" + c.error + ")");
  if (c.code) {
    switch (*c.code) {
    case wf::errc::unknown_job:
      return http_error(404, "no job '" + cli::job::shown(id, 200) + "'");
    case wf::errc::job_exists:
      return http_error(409, "a job '" + cli::job::shown(id, 200) + "' exists already");
    case wf::errc::wrong_state:
    case wf::errc::illegal_transition:
      return http_error(409, "job '" + cli::job::shown(id, 200)
                                 + "' is not in a state that allows this: " + c.error);
    case wf::errc::empty_job:
    case wf::errc::unknown_agent_kind:
    case wf::errc::zero_timeout:
    case wf::errc::too_large:
    case wf::errc::bad_argument:
      return http_error(400, c.error);
    default:
      break;
    }
  }
  return http_error(503, c.error.empty() ? std::string{"the workflow client failed"}
                                         : c.error);
}

/// The kinds the nodes' agents serve (every wf.agents row), or the answer
/// that says why they cannot be read.
std::optional<http_response> served_kinds(kv_store& store, std::set<std::string>& out) {
  std::string after;
  for (int page = 0; page < 1000; ++page) {
    auto r = store.list(rp::list_request{wf::layout::agents, "", after, 0});
    if (r.code == rp::errc::unknown_collection)
      return std::nullopt;
    if (r.code != rp::errc::ok)
      return store_error(r.code, false);
    for (auto& item : r.items) {
      auto kinds = wf::layout::decode_kinds(item.value);
      out.insert(kinds.begin(), kinds.end());
    }
    if (!r.more || r.items.empty())
      return std::nullopt;
    after = r.items.back().key;
  }
  return std::nullopt;
}

http_response do_submit(const http_request& req, jobs_service& jobs, kv_store* store) {
  auto spec = cli::job::spec_from_json(req.body, {});
  if (!spec)
    return http_error(400, "job spec: " + spec.error());
  if (store) {
    std::set<std::string> kinds;
    if (auto bad = served_kinds(*store, kinds))
      return *bad;
    if (auto e = cli::job::check_kinds(spec.value(), kinds))
      return http_error(400, *e);
  }
  auto r = jobs.submit(spec.value());
  if (!r.value)
    return call_failed(r, spec.value().id.value, true);
  return jobs_answer(201, {{"id", r.value->value}});
}

http_response do_list(const http_request& req, jobs_service& jobs) {
  std::vector<wf::step_state> states;
  if (auto i = req.query.find("state"); i != req.query.end() && !i->second.empty()) {
    auto s = cli::job::parse_state(i->second);
    if (!s)
      return http_error(400, "state: expected pending, processing, processed, error, "
                             "compensating, compensated or cancelled, got '"
                                 + cli::job::shown(i->second) + "'");
    states.push_back(*s);
  } else {
    for (uint8_t i = 0; i < wf::step_state_count; ++i)
      states.push_back(static_cast<wf::step_state>(i));
  }
  auto limit = query_number(req, "limit", default_jobs_page, 1, max_jobs_page);
  if (!limit)
    return http_error(400, "limit: expected a number from 1 to "
                               + std::to_string(max_jobs_page));
  std::string after;
  if (auto i = req.query.find("after"); i != req.query.end())
    after = i->second;
  std::set<wf::job_id> ids;
  for (auto st : states) {
    auto r = jobs.list(st);
    if (!r.value) {
      if (r.code == wf::errc::unknown_job)
        continue; // no job was ever submitted
      return call_failed(r, {}, false);
    }
    for (auto& id : *r.value)
      if (id.value > after)
        ids.insert(id);
  }
  // A job that changed state between the reads is listed once, with the
  // state its record has when it is read below.
  json out = json::array();
  json next = nullptr;
  auto t = jobs.now();
  for (auto& id : ids) {
    if (out.size() >= *limit) {
      next = out.back()["id"];
      break;
    }
    auto v = jobs.get(id);
    if (!v.value) {
      if (v.code == wf::errc::unknown_job)
        continue;
      return call_failed(v, id.value, false);
    }
    if (states.size() == 1 && v.value->job.state != states.front())
      continue; // it left the state asked for
    out.push_back(cli::job::to_json(*v.value, t));
  }
  return jobs_answer(200, {{"jobs", out}, {"next", next}});
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size()
         && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

std::optional<http_response> handle_jobs(const http_request& req, jobs_service* jobs,
                                         kv_store* store) {
  auto& p = req.path;
  if (p != jobs_path && p.rfind(jobs_path + "/", 0) != 0)
    return std::nullopt;
  bool get = req.method == "GET" || req.method == "HEAD";
  bool post = req.method == "POST";
  auto unavailable = [] {
    return http_error(503, "the node's workflow client is not running (starting or "
                           "stopping)");
  };
  if (p == jobs_path) {
    if (!get && !post)
      return http_error(405, "/v1/jobs answers GET (list) and POST (submit)");
    if (!jobs)
      return unavailable();
    return post ? do_submit(req, *jobs, store) : do_list(req, *jobs);
  }
  auto rest = p.substr(jobs_path.size() + 1);
  if (rest.empty())
    return http_error(404, "no job id in the path (/v1/jobs/ID)");
  for (auto* action : {"/cancel", "/resubmit"})
    if (ends_with(rest, action)) {
      if (!post)
        return http_error(405, p + " answers POST only");
      if (!jobs)
        return unavailable();
      wf::job_id id{rest.substr(0, rest.size() - std::string{action}.size())};
      auto r = std::string{action} == "/cancel" ? jobs->cancel(id) : jobs->resubmit(id);
      if (!r.value)
        return call_failed(r, id.value, true);
      return jobs_answer(200, {{"id", id.value}, {"state", wf::to_string(*r.value)}});
    }
  if (!get)
    return http_error(405, p + " answers GET only");
  if (!jobs)
    return unavailable();
  if (ends_with(rest, "/explain")) {
    wf::job_id id{rest.substr(0, rest.size() - 8)};
    auto r = jobs->explain(id);
    if (!r.value)
      return call_failed(r, id.value, false);
    return jobs_answer(200, cli::job::to_json(*r.value, jobs->now()));
  }
  auto r = jobs->get(wf::job_id{rest});
  if (!r.value)
    return call_failed(r, rest, false);
  return jobs_answer(200, cli::job::to_json(*r.value, jobs->now()));
}

} // namespace conclave::node
