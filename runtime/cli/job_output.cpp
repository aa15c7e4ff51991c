#include "runtime/cli/job_output.hpp"

#include "runtime/cli/job_input.hpp"

#include <algorithm>
#include <limits>

namespace conclave::cli::job {

namespace {

using json = nlohmann::json;
namespace wf = conclave::workflow;

constexpr size_t unlimited = std::numeric_limits<size_t>::max();

std::string one_line(std::string_view s) {
  return shown(s, unlimited);
}

json locked_by(wf::scheduler_ref r) {
  if (r.empty())
    return nullptr;
  return json{{"instance", r.instance}, {"incarnation", r.incarnation}};
}

json optional_ns(const std::optional<wf::timestamp>& t) {
  return t ? json(t->count()) : json(nullptr);
}

/// Milliseconds from `now` to `t` (negative: past), rounded toward zero.
json relative_ms(const std::optional<wf::timestamp>& t, wf::timestamp now) {
  if (!t)
    return nullptr;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*t - now).count();
}

std::string ago(wf::timestamp t, wf::timestamp now) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count();
  if (ms < 0)
    return "just now";
  if (ms < 10'000)
    return std::to_string(ms) + " ms ago";
  return std::to_string(ms / 1000) + " s ago";
}

json step_json(const wf::step_record& s, wf::timestamp now) {
  json comp = nullptr;
  if (s.spec.compensation)
    comp = json{{"kind", s.spec.compensation->agent_kind},
                {"payload", s.spec.compensation->payload}};
  return json{
      {"index", s.index.value},
      {"kind", s.spec.agent_kind},
      {"payload", s.spec.payload},
      {"timeout_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(s.spec.timeout).count()},
      {"attempts", s.spec.retry.max_attempts},
      {"compensate", comp},
      {"state", wf::to_string(s.state)},
      {"attempt", s.attempt.value},
      {"failure_count", s.failure_count},
      {"compensation_failures", s.compensation_failures},
      {"last_error", s.last_error},
      {"locked_by", locked_by(s.locked_by)},
      {"agent", s.agent},
      {"complete_by_ns", optional_ns(s.complete_by)},
      {"complete_by_in_ms", relative_ms(s.complete_by, now)},
      {"completed_seq", s.completed_seq},
  };
}

} // namespace

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width;
  for (auto& row : rows) {
    auto& out = cells.emplace_back();
    for (size_t i = 0; i < row.size(); ++i) {
      out.push_back(one_line(row[i]));
      if (width.size() <= i)
        width.push_back(0);
      width[i] = std::max(width[i], out.back().size());
    }
  }
  std::string text;
  for (auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    text += line + '\n';
  }
  return text;
}

json to_json(const wf::job_view& v, wf::timestamp now) {
  auto steps = json::array();
  for (auto& s : v.steps)
    steps.push_back(step_json(s, now));
  return json{
      {"id", v.job.id.value},
      {"state", wf::to_string(v.job.state)},
      {"final", wf::is_final(v.job.state)},
      {"step_count", v.job.step_count},
      {"current_step", v.job.current.value},
      {"failure_threshold", v.job.failure_threshold},
      {"recovery_backoff_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(v.job.recovery_backoff)
           .count()},
      {"last_error", v.job.last_error},
      {"created_ns", v.job.created.count()},
      {"updated_ns", v.job.updated.count()},
      {"steps", steps},
  };
}

json to_json(const wf::job_event& e) {
  return json{{"job", e.job.value},         {"seq", e.seq},
              {"kind", to_string(e.kind)},  {"step", e.step.value},
              {"attempt", e.attempt.value}, {"at_ns", e.at.count()},
              {"detail", e.detail}};
}

json to_json(const wf::stuck_report& r, wf::timestamp now) {
  return json{
      {"id", r.job.value},
      {"state", wf::to_string(r.state)},
      {"step", r.step ? json(r.step->value) : json(nullptr)},
      {"step_state", wf::to_string(r.current_state)},
      {"compensation", r.compensation},
      {"attempt", r.attempt.value},
      {"failure_count", r.failure_count},
      {"failure_threshold", r.failure_threshold},
      {"locked_by", locked_by(r.locked_by)},
      {"complete_by_ns", optional_ns(r.complete_by)},
      {"complete_by_in_ms", relative_ms(r.complete_by, now)},
      {"last_error", r.last_error},
      {"next", wf::to_string(r.next)},
      {"when_ns", optional_ns(r.when)},
      {"when_in_ms", relative_ms(r.when, now)},
      {"then", r.then ? json(wf::to_string(*r.then)) : json(nullptr)},
      {"text", wf::to_string(r, now)},
  };
}

json list_json(const std::vector<list_row>& rows, bool truncated) {
  auto jobs = json::array();
  for (auto& r : rows)
    jobs.push_back({{"id", r.id.value}, {"state", wf::to_string(r.state)}});
  return json{{"jobs", jobs}, {"truncated", truncated}};
}

std::string job_table(const wf::job_view& v, wf::timestamp now) {
  auto& j = v.job;
  std::string head = "job " + one_line(j.id.value) + "  " + wf::to_string(j.state) + "  "
                     + std::to_string(j.step_count) + " step"
                     + (j.step_count == 1 ? "" : "s") + ", failure threshold "
                     + std::to_string(j.failure_threshold) + ", updated "
                     + ago(j.updated, now) + "\n";
  if (!j.last_error.empty())
    head += "last error: " + one_line(j.last_error) + "\n";
  std::vector<std::vector<std::string>> rows{
      {"STEP", "KIND", "PAYLOAD", "STATE", "ATTEMPT", "FAILURES", "LAST ERROR"}};
  for (auto& s : v.steps)
    rows.push_back({std::to_string(s.index.value), shown(s.spec.agent_kind, 30),
                    shown(s.spec.payload, 30), wf::to_string(s.state),
                    std::to_string(s.attempt.value), std::to_string(s.failure_count),
                    shown(s.last_error, 80)});
  return head + render_table(rows);
}

std::string list_table(const std::vector<list_row>& rows) {
  std::vector<std::vector<std::string>> cells{{"ID", "STATE"}};
  for (auto& r : rows)
    cells.push_back({r.id.value, wf::to_string(r.state)});
  return render_table(cells);
}

std::string event_line(const wf::job_event& e) {
  auto line = "seq " + std::to_string(e.seq) + " " + to_string(e.kind) + " step "
              + std::to_string(e.step.value) + " attempt "
              + std::to_string(e.attempt.value);
  if (!e.detail.empty())
    line += ": " + one_line(e.detail);
  return line;
}

std::string report_line(const wf::stuck_report& r, wf::timestamp now) {
  return one_line(wf::to_string(r, now));
}

} // namespace conclave::cli::job
