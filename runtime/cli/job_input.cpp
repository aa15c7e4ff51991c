#include "runtime/cli/job_input.hpp"

#include "runtime/lock/duration_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <limits>

namespace conclave::cli::job {

namespace {

using json = nlohmann::json;
namespace wf = conclave::workflow;

/// Longest step timeout accepted (CompleteBy = claim time + timeout stays
/// far inside 64-bit nanoseconds).
constexpr std::chrono::hours max_step_timeout{24 * 365};

std::string n(size_t v) {
  return std::to_string(v);
}

bool printable_kind(std::string_view k) {
  return std::all_of(k.begin(), k.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f;
  });
}

std::optional<std::string> check_kind(std::string_view kind,
                                      const wf::record_limits& lim) {
  if (kind.empty())
    return std::string{"no agent kind (expected KIND or KIND:PAYLOAD)"};
  if (kind.size() > lim.max_kind_bytes)
    return "agent kind '" + shown(kind) + "' has " + n(kind.size()) + " bytes; at most "
           + n(lim.max_kind_bytes);
  if (!printable_kind(kind))
    return "agent kind '" + shown(kind) + "' has a space or a control character";
  return std::nullopt;
}

std::optional<std::string> check_payload(std::string_view payload,
                                         const wf::record_limits& lim) {
  if (payload.size() > lim.max_payload_bytes)
    return "payload of " + n(payload.size()) + " bytes; at most "
           + n(lim.max_payload_bytes);
  return std::nullopt;
}

/// The line and column (from 1) of byte `pos` (from 1, as nlohmann reports
/// it) of `text`.
std::string position(std::string_view text, size_t pos) {
  size_t line = 1;
  size_t col = 1;
  auto end = std::min(text.size(), pos > 0 ? pos - 1 : 0);
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + n(line) + ", column " + n(col);
}

/// An unsigned JSON integer in [lo, hi], or the line saying what is wrong.
parsed<uint64_t> get_uint(const json& v, const std::string& where, uint64_t lo,
                          uint64_t hi) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return where + ": expected an integer from " + n(lo) + " to " + n(hi);
  auto x = v.get<uint64_t>();
  if (x < lo || x > hi)
    return where + ": expected an integer from " + n(lo) + " to " + n(hi) + ", got "
           + n(x);
  return x;
}

/// Reads a JSON string into `out`; the line saying what is wrong otherwise.
std::optional<std::string> read_string(const json& v, const std::string& where,
                                       std::string& out) {
  if (!v.is_string())
    return where + ": expected a string";
  out = v.get<std::string>();
  return std::nullopt;
}

/// Every key of `obj` must be one of `allowed`.
std::optional<std::string> only_fields(const json& obj, const std::string& where,
                                       std::initializer_list<const char*> allowed) {
  for (auto& [key, value] : obj.items()) {
    (void)value;
    bool ok = std::any_of(allowed.begin(), allowed.end(),
                          [&](const char* a) { return key == a; });
    if (!ok) {
      std::string list;
      for (auto* a : allowed)
        list += (list.empty() ? "" : ", ") + std::string{a};
      return where + ": unknown field '" + shown(key, 40) + "' (expected " + list + ")";
    }
  }
  return std::nullopt;
}

std::chrono::nanoseconds step_timeout(const submit_flags& flags) {
  return flags.timeout ? *flags.timeout : std::chrono::nanoseconds{default_step_timeout};
}

parsed<wf::step_spec> step_from_json(const json& s, const std::string& where,
                                     const submit_flags& flags,
                                     const wf::record_limits& lim) {
  if (!s.is_object())
    return where + ": expected an object {\"kind\": ..., \"payload\": ...}";
  if (auto e = only_fields(s, where,
                           {"kind", "payload", "timeout_ms", "attempts", "compensate"}))
    return *e;
  wf::step_spec step;
  auto kind = s.find("kind");
  if (kind == s.end())
    return where + ": no \"kind\"";
  if (auto e = read_string(*kind, where + ".kind", step.agent_kind))
    return *e;
  if (auto e = check_kind(step.agent_kind, lim))
    return where + ": " + *e;
  if (auto p = s.find("payload"); p != s.end()) {
    if (auto e = read_string(*p, where + ".payload", step.payload))
      return *e;
    if (auto e = check_payload(step.payload, lim))
      return where + ": " + *e;
  }
  step.timeout = step_timeout(flags);
  if (auto t = s.find("timeout_ms"); t != s.end()) {
    auto max_ms = std::chrono::milliseconds{max_step_timeout}.count();
    auto v = get_uint(*t, where + ".timeout_ms", 1, static_cast<uint64_t>(max_ms));
    if (!v)
      return v.error();
    step.timeout = std::chrono::milliseconds{static_cast<int64_t>(v.value())};
  }
  if (flags.attempts)
    step.retry.max_attempts = *flags.attempts;
  if (auto a = s.find("attempts"); a != s.end()) {
    auto v = get_uint(*a, where + ".attempts", 1, max_step_attempts);
    if (!v)
      return v.error();
    step.retry.max_attempts = static_cast<uint32_t>(v.value());
  }
  if (auto c = s.find("compensate"); c != s.end()) {
    auto cw = where + ".compensate";
    if (!c->is_object())
      return cw + ": expected an object {\"kind\": ..., \"payload\": ...}";
    if (auto e = only_fields(*c, cw, {"kind", "payload"}))
      return *e;
    wf::compensation_spec comp;
    auto ck = c->find("kind");
    if (ck == c->end())
      return cw + ": no \"kind\"";
    if (auto e = read_string(*ck, cw + ".kind", comp.agent_kind))
      return *e;
    if (auto e = check_kind(comp.agent_kind, lim))
      return cw + ": " + *e;
    if (auto p = c->find("payload"); p != c->end()) {
      if (auto e = read_string(*p, cw + ".payload", comp.payload))
        return *e;
      if (auto e = check_payload(comp.payload, lim))
        return cw + ": " + *e;
    }
    step.compensation = std::move(comp);
  }
  return step;
}

} // namespace

std::string shown(std::string_view s, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(s[i]);
    if (u == '\n') {
      out += "\\n";
    } else if (u == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += static_cast<char>(u);
    }
  }
  return out;
}

parsed<wf::step_spec> parse_step(std::string_view text, const submit_flags& flags,
                                 const wf::record_limits& lim) {
  auto colon = text.find(':');
  auto kind = text.substr(0, colon);
  if (auto e = check_kind(kind, lim))
    return "step '" + shown(text) + "': " + *e;
  wf::step_spec step;
  step.agent_kind = std::string{kind};
  if (colon != std::string_view::npos) {
    auto payload = text.substr(colon + 1);
    if (auto e = check_payload(payload, lim))
      return "step '" + shown(kind) + "': " + *e;
    step.payload = std::string{payload};
  }
  step.timeout = step_timeout(flags);
  if (flags.attempts)
    step.retry.max_attempts = *flags.attempts;
  return step;
}

std::optional<std::string> check_limits(const wf::job_spec& spec,
                                        const wf::record_limits& lim) {
  if (spec.steps.empty())
    return std::string{"no steps: give STEP... (KIND[:PAYLOAD]) or --file SPEC.json"};
  if (spec.steps.size() > lim.max_steps)
    return n(spec.steps.size()) + " steps; a job has at most " + n(lim.max_steps);
  auto& id = spec.id.value;
  if (id.size() > lim.max_id_bytes)
    return "job id of " + n(id.size()) + " bytes; at most " + n(lim.max_id_bytes);
  if (std::any_of(id.begin(), id.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
      }))
    return "job id '" + shown(id) + "' has a control character";
  if (spec.failure_threshold == 0 || spec.failure_threshold > lim.max_failure_threshold)
    return "failure threshold " + n(spec.failure_threshold) + ": expected 1 to "
           + n(lim.max_failure_threshold);
  size_t total = 0;
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    auto& s = spec.steps[i];
    auto where = "step " + n(i) + " (" + shown(s.agent_kind, 40) + ")";
    if (auto e = check_kind(s.agent_kind, lim))
      return where + ": " + *e;
    if (auto e = check_payload(s.payload, lim))
      return where + ": " + *e;
    if (s.timeout <= wf::duration::zero())
      return where + ": the timeout must be above 0";
    if (s.timeout > max_step_timeout)
      return where + ": the timeout must be at most 365 days";
    if (s.retry.max_attempts == 0 || s.retry.max_attempts > max_step_attempts)
      return where + ": attempts must be from 1 to " + n(max_step_attempts);
    if (s.compensation) {
      if (auto e = check_kind(s.compensation->agent_kind, lim))
        return where + ": compensation: " + *e;
      if (auto e = check_payload(s.compensation->payload, lim))
        return where + ": compensation: " + *e;
    }
    total += wf::spec_bytes(s);
  }
  if (total > lim.max_spec_bytes)
    return "the steps' kinds and payloads add up to " + n(total) + " bytes; at most "
           + n(lim.max_spec_bytes) + " per job";
  // The protocol's own check, for anything the lines above do not name.
  auto ok = wf::validate(spec, lim, [](const std::string&) { return true; });
  if (!ok)
    return std::string{"the job is refused: "} + ok.error().message();
  return std::nullopt;
}

parsed<wf::job_spec> spec_from_args(const std::vector<std::string>& steps,
                                    const submit_flags& flags,
                                    const wf::record_limits& lim) {
  wf::job_spec spec;
  if (flags.id)
    spec.id.value = *flags.id;
  if (flags.failure_threshold)
    spec.failure_threshold = *flags.failure_threshold;
  for (auto& text : steps) {
    auto s = parse_step(text, flags, lim);
    if (!s)
      return s.error();
    spec.steps.push_back(std::move(s.value()));
  }
  if (auto e = check_limits(spec, lim))
    return *e;
  return spec;
}

parsed<wf::job_spec> spec_from_json(std::string_view text, const submit_flags& flags,
                                    const wf::record_limits& lim) {
  if (text.size() > max_spec_file_bytes)
    return "has " + n(text.size()) + " bytes; a spec file has at most "
           + n(max_spec_file_bytes);
  bool too_deep = false;
  json::parser_callback_t depth_guard = [&too_deep](int depth, json::parse_event_t,
                                                    json&) {
    if (depth > max_spec_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), depth_guard);
  } catch (const json::exception& e) {
    // e.what() quotes the bytes it read last (any bytes): not printed.
    auto* pe = dynamic_cast<const json::parse_error*>(&e);
    return "not valid JSON ("
           + (pe ? "at " + position(text, pe->byte) : std::string{"unreadable"}) + ")";
  }
  if (too_deep)
    return "nested deeper than " + std::to_string(max_spec_depth)
           + " levels; expected {\"steps\": [{\"kind\": ...}, ...]}";
  if (!doc.is_object())
    return std::string{"expected a JSON object {\"steps\": [{\"kind\": ...}, ...]}"};
  if (auto e = only_fields(doc, "spec",
                           {"id", "failure_threshold", "recovery_backoff_ms", "steps"}))
    return *e;
  wf::job_spec spec;
  if (auto i = doc.find("id"); i != doc.end()) {
    if (auto e = read_string(*i, "id", spec.id.value))
      return *e;
  }
  if (auto t = doc.find("failure_threshold"); t != doc.end()) {
    auto v = get_uint(*t, "failure_threshold", 1, lim.max_failure_threshold);
    if (!v)
      return v.error();
    spec.failure_threshold = static_cast<uint32_t>(v.value());
  }
  if (auto b = doc.find("recovery_backoff_ms"); b != doc.end()) {
    auto max_ms = std::chrono::milliseconds{max_step_timeout}.count();
    auto v = get_uint(*b, "recovery_backoff_ms", 0, static_cast<uint64_t>(max_ms));
    if (!v)
      return v.error();
    spec.recovery_backoff = std::chrono::milliseconds{static_cast<int64_t>(v.value())};
  }
  auto steps = doc.find("steps");
  if (steps == doc.end())
    return std::string{"no \"steps\": expected {\"steps\": [{\"kind\": ...}, ...]}"};
  if (!steps->is_array())
    return std::string{"steps: expected an array of steps"};
  if (steps->empty())
    return std::string{"steps: the job has no steps"};
  if (steps->size() > lim.max_steps)
    return "steps: " + n(steps->size()) + " steps; a job has at most " + n(lim.max_steps);
  for (size_t i = 0; i < steps->size(); ++i) {
    auto s = step_from_json((*steps)[i], "steps[" + n(i) + "]", flags, lim);
    if (!s)
      return s.error();
    spec.steps.push_back(std::move(s.value()));
  }
  if (flags.id)
    spec.id.value = *flags.id;
  if (flags.failure_threshold)
    spec.failure_threshold = *flags.failure_threshold;
  if (auto e = check_limits(spec, lim))
    return *e;
  return spec;
}

parsed<wf::job_spec> spec_from_file(const std::string& path, const submit_flags& flags,
                                    const wf::record_limits& lim) {
  auto where = "--file " + shown(path, 200) + ": ";
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return where + "cannot be read";
  std::string text;
  text.resize(max_spec_file_bytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return where + "cannot be read";
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_spec_file_bytes)
    return where + "larger than " + n(max_spec_file_bytes) + " bytes";
  auto r = spec_from_json(text, flags, lim);
  if (!r)
    return where + r.error();
  return r;
}

std::optional<std::string> check_kinds(const wf::job_spec& spec,
                                       const std::set<std::string>& served) {
  auto unknown = [&](const std::string& kind, size_t i, const char* what) {
    std::string list;
    for (auto& k : served) {
      if (list.size() > 200) {
        list += ", ...";
        break;
      }
      list += (list.empty() ? "" : ", ") + shown(k, 40);
    }
    return "unknown agent kind '" + shown(kind, 40) + "' in step " + n(i) + what
           + (served.empty() ? std::string{"; no node of the cluster serves any kind"}
                             : "; the cluster's agents serve: " + list);
  };
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    auto& s = spec.steps[i];
    if (served.count(s.agent_kind) == 0)
      return unknown(s.agent_kind, i, "");
    if (s.compensation && served.count(s.compensation->agent_kind) == 0)
      return unknown(s.compensation->agent_kind, i, " (compensation)");
  }
  return std::nullopt;
}

std::optional<wf::step_state> parse_state(std::string_view text) {
  for (uint8_t i = 0; i < wf::step_state_count; ++i) {
    auto s = static_cast<wf::step_state>(i);
    if (text == wf::to_string(s))
      return s;
  }
  return std::nullopt;
}

} // namespace conclave::cli::job
