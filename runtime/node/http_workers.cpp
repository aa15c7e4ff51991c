#include "runtime/node/http_workers.hpp"

#include <string>
#include <thread>

#include <sys/socket.h>

namespace conclave::node {

namespace {

thread_local http_workers* current_pool = nullptr;
/// Set when this worker left the pool: it ends with its connection.
thread_local bool left_pool = false;
thread_local http_gate::ticket* serving = nullptr;

} // namespace

void refuse_connection(int sock, bool tls) {
  if (!tls) {
    static const std::string answer =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: 38\r\nConnection: close\r\n\r\n"
        "{\"error\":\"too many open connections\"}";
    static_cast<void>(
        ::send(sock, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL));
  }
  ::shutdown(sock, SHUT_RDWR);
}

http_workers::http_workers(size_t workers, hooks h)
    : workers_{workers}, hooks_{std::move(h)} {
  std::lock_guard<std::mutex> guard{mtx_};
  for (size_t i = 0; i < workers; ++i)
    spawn_locked(false);
  spawn_locked(true);
}

http_workers::~http_workers() {
  shutdown();
}

http_workers* http_workers::current() {
  return current_pool;
}

http_gate::ticket* http_workers::current_ticket() {
  return serving;
}

void http_workers::enqueue(int sock, std::function<void()> fn) {
  task t{sock, std::move(fn), {}};
  if (sock >= 0 && hooks_.gate)
    t.ticket = hooks_.gate->admit(sock);
  bool refuse = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    // An admitted connection is within the gate's bounds, which the workers
    // match; only one the gate cannot see is bounded here.
    refuse = sock >= 0 && hooks_.gate ? !t.ticket.admitted : open_ >= workers_;
    if (!refuse) {
      ++open_;
      jobs_.push_back(std::move(t));
    } else {
      rejects_.push_back(std::move(t));
    }
  }
  // One waiting worker of the right queue: waking all of them (64 on a
  // machine of 2 cores) for every connection cost each new connection tens
  // of context switches.
  (refuse ? rejects_cv_ : jobs_cv_).notify_one();
}

void http_workers::leave_pool() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (left_pool || current_pool != this)
    return;
  left_pool = true;
  --open_;
  spawn_locked(false);
}

void http_workers::shutdown() {
  std::unique_lock<std::mutex> lock{mtx_};
  stopping_ = true;
  jobs_cv_.notify_all();
  rejects_cv_.notify_all();
  done_.wait(lock, [this] { return live_ == 0; });
}

void http_workers::spawn_locked(bool refuser) {
  ++live_;
  std::thread{[this, refuser] { run(refuser); }}.detach();
}

void http_workers::run(bool refuser) {
  current_pool = this;
  auto& q = refuser ? rejects_ : jobs_;
  auto& cv = refuser ? rejects_cv_ : jobs_cv_;
  for (;;) {
    task job;
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv.wait(lock, [&] { return stopping_ || !q.empty(); });
      if (q.empty())
        break;
      job = std::move(q.front());
      q.pop_front();
    }
    if (refuser && job.sock >= 0) {
      refuse_connection(job.sock, hooks_.tls);
      if (hooks_.on_refused)
        hooks_.on_refused();
    }
    serving = job.ticket.admitted ? &job.ticket : nullptr;
    job.fn();
    serving = nullptr;
    if (hooks_.gate)
      hooks_.gate->done(job.ticket);
    if (left_pool)
      break;
    if (!refuser) {
      std::lock_guard<std::mutex> guard{mtx_};
      --open_;
    }
  }
  // Under the lock: once shutdown sees zero, this thread touches nothing.
  std::lock_guard<std::mutex> guard{mtx_};
  --live_;
  done_.notify_all();
}

} // namespace conclave::node
