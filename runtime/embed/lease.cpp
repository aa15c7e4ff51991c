// The C++ lease API (include/conclave/lease.hpp) over the lease client
// (actors/replication/lease_client.hpp) and one store connection
// (runtime/cluster/store_access.hpp).
#include <conclave/lease.hpp>

#include "actors/replication/lease_client.hpp"
#include "runtime/cluster/store_access.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace conclave {

namespace rp = conclave::replication;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct store_client::impl {
  std::string error;
  std::unique_ptr<cluster::store_connection> conn;
  std::chrono::milliseconds request_timeout{5000};

  rp::client_options options(std::chrono::milliseconds deadline) const {
    auto o = conn->client_options();
    o.deadline = deadline;
    o.attempt_timeout = std::min<caf::timespan>(deadline, 1s);
    return o;
  }
};

store_client::store_client(store_access access) : impl_(std::make_shared<impl>()) {
  cluster::store_access a{access.peers,  access.cluster,  access.dir,
                          access.tls_ca, access.tls_cert, access.tls_key};
  if (auto err = cluster::settle_access(a)) {
    impl_->error = *err;
    return;
  }
  std::map<uint64_t, node::address> members;
  if (auto err = cluster::parse_members(a, members)) {
    impl_->error = *err;
    return;
  }
  impl_->conn = std::make_unique<cluster::store_connection>(a, members);
  impl_->conn->wait_ready(500ms);
}

store_client::~store_client() = default;

bool store_client::ok() const {
  return impl_->conn != nullptr;
}

const std::string& store_client::error() const {
  return impl_->error;
}

namespace {

void set_why(std::string* why, std::string text) {
  if (why)
    *why = std::move(text);
}

} // namespace

bool store_client::put(const std::string& collection, const std::string& key,
                       const std::string& value, const lease* fence, std::string* why) {
  if (!ok()) {
    set_why(why, impl_->error);
    return false;
  }
  rp::txn_request req;
  if (fence) {
    if (fence->token() == 0) {
      set_why(why, "stale_token");
      return false;
    }
    req.ops.push_back(rp::txn_op{
        fence->name(), {}, rp::format_token(fence->token()), rp::op_kind::expect_lease});
  }
  req.ops.push_back(rp::txn_op{collection, key, value, rp::op_kind::put});
  rp::kv_client c{impl_->conn->system(), impl_->options(impl_->request_timeout)};
  auto r = c.transact(req);
  if (r.code != rp::errc::ok) {
    set_why(why, std::string{rp::to_string(r.code)});
    return false;
  }
  return true;
}

std::optional<std::string> store_client::get(const std::string& collection,
                                             const std::string& key, std::string* why) {
  if (!ok()) {
    set_why(why, impl_->error);
    return std::nullopt;
  }
  rp::kv_client c{impl_->conn->system(), impl_->options(impl_->request_timeout)};
  auto r = c.get(collection, key);
  if (r.code != rp::errc::ok) {
    set_why(why, std::string{rp::to_string(r.code)});
    return std::nullopt;
  }
  if (!r.found) {
    set_why(why, "not found");
    return std::nullopt;
  }
  return r.value;
}

std::vector<store_client::holder> store_client::holders(const std::string& name,
                                                        std::string* why) {
  std::vector<holder> out;
  if (!ok()) {
    set_why(why, impl_->error);
    return out;
  }
  rp::lease_client c{impl_->conn->system(), impl_->conn->client_options()};
  auto r = c.holders(name, impl_->request_timeout);
  if (r.code != rp::errc::ok || !r.holders) {
    set_why(why, std::string{rp::to_string(r.code)});
    return out;
  }
  for (auto& h : r.holders->holders)
    out.push_back(holder{h.holder, h.token, h.label});
  return out;
}

// -- lease ---------------------------------------------------------------------

struct lease::state {
  std::shared_ptr<store_client::impl> store;
  std::string name;
  std::string holder;
  lease_options opts;
  std::chrono::milliseconds margin{1};

  mutable std::mutex mu;
  std::condition_variable cv;
  uint64_t token = 0;
  steady::time_point valid_until{};
  bool lost = false;
  bool released = false;
  bool stopping = false;
  std::string error;
  std::function<void()> on_lost;
  std::thread renewer;

  /// Marks the lease lost and runs the callback once (mu held on entry; it
  /// is released while the callback runs).
  void lose(std::unique_lock<std::mutex>& lk, std::string why) {
    if (lost || released)
      return;
    lost = true;
    error = std::move(why);
    auto f = std::move(on_lost);
    on_lost = nullptr;
    if (f) {
      lk.unlock();
      f();
      lk.lock();
    }
  }

  void renew_loop() {
    rp::lease_client client{store->conn->system(), store->conn->client_options()};
    auto interval = std::max<std::chrono::milliseconds>(opts.ttl / 3, 1ms);
    auto last_send = steady::now();
    std::unique_lock<std::mutex> lk{mu};
    while (!stopping && !lost && !released) {
      auto give_up = valid_until - margin;
      auto next = std::min(last_send + interval, give_up);
      cv.wait_until(lk, next, [&] { return stopping || released; });
      if (stopping || released)
        return;
      auto now = steady::now();
      if (now >= give_up) {
        lose(lk, "no renewal succeeded before the lease ran out");
        return;
      }
      if (now < last_send + interval)
        continue;
      // A renewal answers before the lease runs out (less the margin).
      auto budget = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - now);
      budget = std::min(budget, interval);
      auto tok = token;
      lk.unlock();
      last_send = steady::now();
      auto r = client.renew(name, holder, tok, opts.ttl, budget);
      lk.lock();
      if (r.code == rp::errc::ok) {
        valid_until = std::max(valid_until, r.safe_until);
      } else if (r.code == rp::errc::stale_token) {
        lose(lk, "the lease was granted to another holder (stale_token)");
        return;
      }
      // Anything else: try again at the next interval, until give_up.
    }
  }
};

lease::lease(store_client& s, std::string name, lease_options o)
    : s_(std::make_shared<state>()) {
  s_->store = s.impl_;
  s_->name = std::move(name);
  s_->opts = o;
  s_->margin = std::max<std::chrono::milliseconds>(o.ttl / 50, 1ms);
  if (!s.ok()) {
    s_->error = s.error();
    return;
  }
  s_->holder = rp::lease_client::make_holder_id();
  rp::lease_params p;
  p.ttl = o.ttl;
  p.limit = o.limit;
  p.label = rp::lease_client::default_label(o.label);
  rp::lease_client client{s.impl_->conn->system(), s.impl_->conn->client_options()};
  auto r = client.acquire(s_->name, s_->holder, p, o.wait);
  if (r.code != rp::errc::ok) {
    s_->error = std::string{rp::to_string(r.code)};
    if (r.code == rp::errc::lease_busy && r.holders && !r.holders->holders.empty())
      s_->error += " (held by " + r.holders->holders.front().label + ")";
    return;
  }
  s_->token = r.token;
  s_->valid_until = r.safe_until;
  auto st = s_;
  s_->renewer = std::thread([st] { st->renew_loop(); });
}

lease::~lease() {
  if (s_)
    release();
}

lease::lease(lease&&) noexcept = default;
lease& lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    if (s_)
      release();
    s_ = std::move(other.s_);
  }
  return *this;
}

bool lease::held() const {
  if (!s_)
    return false;
  std::lock_guard<std::mutex> lk{s_->mu};
  return s_->token != 0 && !s_->lost && !s_->released
         && steady::now() < s_->valid_until - s_->margin;
}

uint64_t lease::token() const {
  return s_ ? s_->token : 0;
}

const std::string& lease::name() const {
  static const std::string none;
  return s_ ? s_->name : none;
}

steady::time_point lease::valid_until() const {
  if (!s_)
    return {};
  std::lock_guard<std::mutex> lk{s_->mu};
  return s_->valid_until;
}

std::string lease::error() const {
  if (!s_)
    return "moved from";
  std::lock_guard<std::mutex> lk{s_->mu};
  return s_->error;
}

void lease::on_lost(std::function<void()> f) {
  if (!s_ || !f)
    return;
  std::unique_lock<std::mutex> lk{s_->mu};
  if (s_->released)
    return;
  if (s_->lost || s_->token == 0) {
    lk.unlock();
    f();
    return;
  }
  s_->on_lost = std::move(f);
}

void lease::release() {
  if (!s_)
    return;
  uint64_t tok = 0;
  {
    std::lock_guard<std::mutex> lk{s_->mu};
    if (s_->released)
      return;
    s_->released = true;
    s_->on_lost = nullptr;
    tok = s_->lost ? 0 : s_->token;
    s_->cv.notify_all();
  }
  if (s_->renewer.joinable()) {
    if (s_->renewer.get_id() == std::this_thread::get_id())
      s_->renewer.detach(); // release() from the on_lost callback
    else
      s_->renewer.join();
  }
  if (tok != 0 && s_->store && s_->store->conn) {
    rp::lease_client client{s_->store->conn->system(), s_->store->conn->client_options()};
    (void)client.release(s_->name, s_->holder, tok, s_->store->request_timeout);
  }
}

// -- holder_watch ---------------------------------------------------------------

struct holder_watch::state {
  std::shared_ptr<store_client::impl> store;
  std::string name;
  callback on_change;
  std::chrono::milliseconds interval{100};
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;

  void run() {
    rp::lease_client client{store->conn->system(), store->conn->client_options()};
    std::optional<std::vector<std::pair<std::string, uint64_t>>> last;
    std::unique_lock<std::mutex> lk{mu};
    while (!stopping) {
      lk.unlock();
      auto r = client.holders(name, std::max<std::chrono::milliseconds>(interval, 500ms));
      if (r.code == rp::errc::ok && r.holders) {
        std::vector<std::pair<std::string, uint64_t>> now;
        std::vector<store_client::holder> out;
        for (auto& h : r.holders->holders) {
          now.emplace_back(h.holder, h.token);
          out.push_back(store_client::holder{h.holder, h.token, h.label});
        }
        if (!last || *last != now) {
          last = now;
          on_change(out);
        }
      }
      lk.lock();
      cv.wait_for(lk, interval, [this] { return stopping; });
    }
  }
};

holder_watch::holder_watch(store_client& s, std::string name, callback on_change,
                           std::chrono::milliseconds interval)
    : s_(std::make_shared<state>()) {
  s_->store = s.impl_;
  s_->name = std::move(name);
  s_->on_change = std::move(on_change);
  s_->interval = std::max<std::chrono::milliseconds>(interval, 1ms);
  if (!s.ok() || !s_->on_change)
    return;
  auto st = s_;
  s_->thread = std::thread([st] { st->run(); });
}

holder_watch::~holder_watch() {
  {
    std::lock_guard<std::mutex> lk{s_->mu};
    s_->stopping = true;
  }
  s_->cv.notify_all();
  if (s_->thread.joinable())
    s_->thread.join();
}

} // namespace conclave
