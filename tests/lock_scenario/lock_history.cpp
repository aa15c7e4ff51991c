#include "tests/lock_scenario/lock_history.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace conclave::lock_scenario {

size_t history_report::count(rule r) const {
  return size_t(std::count_if(violations.begin(), violations.end(),
                              [r](const violation& v) { return v.broken == r; }));
}

int64_t history_report::max_overlap_ns() const {
  int64_t m = 0;
  for (auto& v : violations)
    m = std::max(m, v.amount_ns);
  return m;
}

namespace {

bool parse_line(const std::string& line, std::string& kind, uint64_t& token, int64_t& t,
                std::string& pid) {
  std::istringstream is(line);
  std::string token_text, t_text, label;
  if (!(is >> kind >> token_text >> t_text))
    return false;
  pid.clear();
  if (is >> label)
    is >> pid;
  if (kind != "start" && kind != "alive" && kind != "end")
    return false;
  // Digits only: istream would take "-1" as a huge unsigned token.
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
  };
  if (!digits(token_text) || !digits(t_text))
    return false;
  token = std::stoull(token_text);
  t = std::stoll(t_text);
  return true; // the label and the ppid are for the driver
}

const char* rule_name(rule r) {
  switch (r) {
  case rule::overlap:
    return "overlap";
  case rule::token_order:
    return "token order";
  case rule::stale_token:
    return "stale token";
  }
  return "?";
}

} // namespace

history_report check_history(std::istream& in) {
  history_report r;
  // A holder is a token and the process that ran with it: two processes
  // granted the same token are two holders (and break token order).
  std::map<std::pair<uint64_t, std::string>, holder> by_token;
  std::string line;
  while (std::getline(in, line)) {
    ++r.lines;
    std::string kind;
    uint64_t token = 0;
    int64_t t = 0;
    std::string pid;
    if (!parse_line(line, kind, token, t, pid)) {
      r.malformed.push_back("line " + std::to_string(r.lines) + ": cannot parse '"
                            + line.substr(0, 80) + "'");
      continue;
    }
    auto it = by_token.find({token, pid});
    if (kind == "start") {
      if (it != by_token.end()) {
        // One process starting twice with one token: the probe never does.
        r.violations.push_back({rule::token_order, token, token, 0, t});
        continue;
      }
      by_token.emplace(std::pair{token, pid}, holder{token, t, t, false, 1});
      continue;
    }
    if (it == by_token.end()) {
      r.malformed.push_back("line " + std::to_string(r.lines) + ": " + kind + " of token "
                            + std::to_string(token) + " before its start");
      continue;
    }
    auto& h = it->second;
    h.last_ns = std::max(h.last_ns, t);
    h.ended = h.ended || kind == "end";
    ++h.lines;
  }
  for (auto& [key, h] : by_token)
    r.holders.push_back(h);
  std::sort(r.holders.begin(), r.holders.end(), [](const holder& a, const holder& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.token < b.token;
  });
  auto& hs = r.holders;
  for (size_t j = 0; j < hs.size(); ++j) {
    // overlap: an earlier-started holder still running when this one started
    for (size_t i = 0; i < j; ++i)
      if (hs[i].last_ns > hs[j].start_ns)
        r.violations.push_back({rule::overlap, hs[i].token, hs[j].token,
                                hs[i].last_ns - hs[j].start_ns, hs[j].start_ns});
    // token order: started after the previous holder, yet not a larger token
    if (j > 0 && hs[j].token <= hs[j - 1].token)
      r.violations.push_back(
          {rule::token_order, hs[j - 1].token, hs[j].token, 0, hs[j].start_ns});
  }
  // stale token: a smaller token's line after a larger token's start
  for (auto a = by_token.begin(); a != by_token.end(); ++a)
    for (auto b = std::next(a); b != by_token.end(); ++b)
      if (a->first.first < b->first.first && a->second.last_ns > b->second.start_ns)
        r.violations.push_back({rule::stale_token, a->first.first, b->first.first,
                                a->second.last_ns - b->second.start_ns,
                                b->second.start_ns});
  return r;
}

void print_report(const history_report& r, std::ostream& out, size_t max_listed) {
  auto ms = [](int64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", double(ns) / 1e6);
    return std::string(b);
  };
  for (size_t i = 0; i < r.malformed.size() && i < max_listed; ++i)
    out << "malformed: " << r.malformed[i] << "\n";
  for (size_t i = 0; i < r.violations.size() && i < max_listed; ++i) {
    auto& v = r.violations[i];
    out << "violation (" << rule_name(v.broken) << "): ";
    switch (v.broken) {
    case rule::overlap:
      out << "token " << v.earlier << " still ran " << ms(v.amount_ns) << " ms after "
          << (v.earlier == v.later ? "another holder of " : "") << "token " << v.later
          << " started\n";
      break;
    case rule::token_order:
      if (v.earlier == v.later)
        out << "token " << v.earlier << " granted twice\n";
      else
        out << "token " << v.later << " started after token " << v.earlier
            << " but is not larger\n";
      break;
    case rule::stale_token:
      out << "token " << v.earlier << " ran " << ms(v.amount_ns)
          << " ms after the larger token " << v.later << " started\n";
      break;
    }
  }
  if (r.violations.size() > max_listed)
    out << "... " << r.violations.size() - max_listed << " more violations\n";
  size_t ended = size_t(std::count_if(r.holders.begin(), r.holders.end(),
                                      [](const holder& h) { return h.ended; }));
  out << "summary holders=" << r.holders.size() << " ended=" << ended
      << " lines=" << r.lines << " violations=" << r.violations.size()
      << " overlap=" << r.count(rule::overlap) << " order=" << r.count(rule::token_order)
      << " stale=" << r.count(rule::stale_token)
      << " max_overlap_ms=" << ms(r.max_overlap_ns())
      << " malformed=" << r.malformed.size() << "\n";
}

} // namespace conclave::lock_scenario
