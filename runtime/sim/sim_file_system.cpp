#include "runtime/sim/sim_file_system.hpp"

#include <algorithm>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

namespace conclave::sim {

namespace fs = std::filesystem;
using store::result;
namespace outcome = store::outcome;

namespace {

std::error_code err(std::errc e) {
  return std::make_error_code(e);
}

/// A write or truncation not yet synced.
struct data_op {
  bool truncate = false;
  uint64_t offset = 0; // write: where; truncate: the new size
  std::string bytes;
};

void apply_op(std::string& content, const data_op& d) {
  if (d.truncate) {
    content.resize(d.offset, '\0');
    return;
  }
  if (content.size() < d.offset + d.bytes.size())
    content.resize(d.offset + d.bytes.size(), '\0');
  content.replace(d.offset, d.bytes.size(), d.bytes);
}

struct inode {
  std::string data;    // what reads see
  std::string durable; // what survives a crash
  std::vector<data_op> pending;
  uint64_t pending_bytes = 0;
};

struct node {
  bool dir = false;
  std::shared_ptr<inode> file;
};

/// Paths as keys: "a/b" (relative to the root, which is "").
using tree = std::map<std::string, node>;

struct meta_op {
  enum kind { mkdir, create, unlink, rename } what;
  std::string a, b;
  std::shared_ptr<inode> file;
};

std::string key(const fs::path& p) {
  auto s = p.lexically_normal().relative_path().generic_string();
  while (!s.empty() && s.back() == '/')
    s.pop_back();
  if (s == ".")
    s.clear();
  return s;
}

std::string parent(const std::string& k) {
  auto slash = k.rfind('/');
  return slash == std::string::npos ? std::string{} : k.substr(0, slash);
}

std::string name_of(const std::string& k) {
  auto slash = k.rfind('/');
  return slash == std::string::npos ? k : k.substr(slash + 1);
}

bool under(const std::string& k, const std::string& dir) {
  if (dir.empty())
    return !k.empty();
  return k.size() > dir.size() && k.compare(0, dir.size(), dir) == 0
         && k[dir.size()] == '/';
}

/// The keys strictly under `dir`.
std::vector<std::string> descendants(const tree& t, const std::string& dir) {
  std::vector<std::string> out;
  auto from = dir.empty() ? t.begin() : t.lower_bound(dir + "/");
  for (auto it = from; it != t.end() && under(it->first, dir); ++it)
    out.push_back(it->first);
  return out;
}

void apply_op(tree& t, const meta_op& m) {
  switch (m.what) {
  case meta_op::mkdir:
    t[m.a] = node{true, nullptr};
    break;
  case meta_op::create:
    t[m.a] = node{false, m.file};
    break;
  case meta_op::unlink:
    t.erase(m.a);
    break;
  case meta_op::rename: {
    auto moved = descendants(t, m.a);
    t.erase(m.b);
    for (auto& k : descendants(t, m.b))
      t.erase(k); // an empty directory replaced: nothing here
    auto it = t.find(m.a);
    if (it == t.end())
      break;
    auto n = it->second;
    t.erase(it);
    t[m.b] = n;
    for (auto& k : moved) {
      auto child = t[k];
      t.erase(k);
      t[m.b + k.substr(m.a.size())] = child;
    }
    break;
  }
  }
}

bool touches(const meta_op& m, const std::string& dir) {
  return parent(m.a) == dir || (m.what == meta_op::rename && parent(m.b) == dir);
}

} // namespace

struct sim_file_system::state {
  mutable std::mutex mtx;
  options opts;
  std::mt19937_64 rng;
  tree live;
  tree durable;
  std::vector<meta_op> journal; // namespace operations not yet durable
  uint64_t generation = 0;
  bool down = false;
  std::map<std::string, uint64_t> locks; // key -> lock id
  uint64_t next_lock = 1;
  stats counters;
  std::string last_crash;
  std::function<void(const op&)> hook;

  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng() % n; }

  /// Called with mtx held.
  result<void> usable(uint64_t gen) const {
    if (down || gen != generation)
      return err(std::errc::io_error);
    return outcome::success();
  }

  const node* find(const std::string& k) const {
    static const node root{true, nullptr};
    if (k.empty())
      return &root;
    auto it = live.find(k);
    return it == live.end() ? nullptr : &it->second;
  }

  /// The parent of `k` exists and is a directory.
  result<void> parent_dir(const std::string& k) const {
    auto p = find(parent(k));
    if (!p)
      return err(std::errc::no_such_file_or_directory);
    if (!p->dir)
      return err(std::errc::not_a_directory);
    return outcome::success();
  }

  void log(meta_op m) {
    apply_op(live, m);
    journal.push_back(std::move(m));
    ++counters.namespace_ops;
  }

  void add_pending(inode& f, data_op d) {
    if (!d.truncate) {
      f.pending_bytes += d.bytes.size();
      counters.unsynced_bytes += d.bytes.size();
    }
    apply_op(f.data, d);
    f.pending.push_back(std::move(d));
  }

  void sync_file(inode& f) {
    // The pending operations, not a copy of the file: a sync costs what was
    // written since the last one.
    for (auto& d : f.pending)
      apply_op(f.durable, d);
    f.pending.clear();
    counters.unsynced_bytes -= f.pending_bytes;
    f.pending_bytes = 0;
  }

  /// What survives of `f`: its durable content, a prefix of its pending
  /// operations, the next write torn (and maybe garbled).
  std::string tear(inode& f, const std::string& name) {
    std::string content = f.durable;
    auto n = f.pending.size();
    std::ostringstream what;
    if (n > 0) {
      auto kept = below(n + 1);
      for (size_t i = 0; i < kept; ++i)
        apply_op(content, f.pending[i]);
      what << name << ": " << kept << "/" << n << " writes";
      if (kept < n && !f.pending[kept].truncate && !f.pending[kept].bytes.empty()) {
        auto& d = f.pending[kept];
        // Half the time the write is lost whole, else torn after 1..all bytes.
        auto part = below(2) == 0 ? 0 : 1 + below(d.bytes.size());
        if (part > 0) {
          data_op torn{false, d.offset, d.bytes.substr(0, part)};
          auto end = d.offset + part;
          std::uniform_real_distribution<double> coin{0.0, 1.0};
          if (coin(rng) < opts.garble) {
            auto sector = std::max<uint64_t>(opts.sector, 1);
            auto from = std::max<uint64_t>(d.offset, (end - 1) / sector * sector);
            for (auto i = from; i < end; ++i)
              torn.bytes[i - d.offset] = static_cast<char>(rng() & 0xff);
            what << " +" << part << " bytes torn (garbled from " << from << ")";
          } else {
            what << " +" << part << " bytes torn";
          }
          apply_op(content, torn);
        }
      }
      what << "; ";
    }
    counters.unsynced_bytes -= f.pending_bytes;
    f.pending.clear();
    f.pending_bytes = 0;
    f.durable = content;
    f.data = std::move(content);
    return what.str();
  }
};

namespace {

class sim_file final : public store::writable_file {
public:
  sim_file(std::shared_ptr<sim_file_system::state> st, std::shared_ptr<inode> f,
           fs::path path, uint64_t gen)
      : st_(std::move(st)), f_(std::move(f)), path_(std::move(path)), gen_(gen) {}

  result<void> write(std::string_view data) override {
    auto w = write_at(pos_, data);
    if (w)
      pos_ += data.size();
    return w;
  }

  result<void> write_at(uint64_t offset, std::string_view data) override {
    call_hook(sim_file_system::op_kind::write, data.size());
    std::lock_guard<std::mutex> guard{st_->mtx};
    if (auto u = check(); !u)
      return u;
    ++st_->counters.operations;
    ++st_->counters.writes;
    st_->counters.bytes_written += data.size();
    st_->add_pending(*f_, data_op{false, offset, std::string{data}});
    return outcome::success();
  }

  result<void> truncate(uint64_t size) override {
    call_hook(sim_file_system::op_kind::truncate, 0);
    std::lock_guard<std::mutex> guard{st_->mtx};
    if (auto u = check(); !u)
      return u;
    ++st_->counters.operations;
    st_->add_pending(*f_, data_op{true, size, {}});
    return outcome::success();
  }

  result<void> sync() override {
    uint64_t unsynced = 0;
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      unsynced = f_->pending_bytes;
    }
    call_hook(sim_file_system::op_kind::sync, unsynced);
    std::lock_guard<std::mutex> guard{st_->mtx};
    if (auto u = check(); !u)
      return u;
    ++st_->counters.operations;
    ++st_->counters.syncs;
    st_->sync_file(*f_);
    return outcome::success();
  }

  result<void> close() override {
    call_hook(sim_file_system::op_kind::close, 0);
    std::lock_guard<std::mutex> guard{st_->mtx};
    if (closed_)
      return err(std::errc::bad_file_descriptor);
    closed_ = true;
    ++st_->counters.operations;
    return outcome::success(); // closing a dead process's file is no error
  }

private:
  result<void> check() const {
    if (closed_)
      return err(std::errc::bad_file_descriptor);
    return st_->usable(gen_);
  }

  void call_hook(sim_file_system::op_kind k, uint64_t bytes) {
    std::function<void(const sim_file_system::op&)> hook;
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      hook = st_->hook;
    }
    if (hook)
      hook(sim_file_system::op{k, path_, bytes});
  }

  std::shared_ptr<sim_file_system::state> st_;
  std::shared_ptr<inode> f_;
  fs::path path_;
  uint64_t gen_;
  uint64_t pos_ = 0;
  bool closed_ = false;
};

class sim_lock final : public store::file_lock {
public:
  sim_lock(std::shared_ptr<sim_file_system::state> st, std::string k, uint64_t id)
      : st_(std::move(st)), key_(std::move(k)), id_(id) {}
  ~sim_lock() override {
    std::lock_guard<std::mutex> guard{st_->mtx};
    auto it = st_->locks.find(key_);
    if (it != st_->locks.end() && it->second == id_)
      st_->locks.erase(it);
  }

private:
  std::shared_ptr<sim_file_system::state> st_;
  std::string key_;
  uint64_t id_;
};

} // namespace

sim_file_system::sim_file_system(uint64_t seed) : sim_file_system(seed, options{}) {}

sim_file_system::sim_file_system(uint64_t seed, options opts)
    : st_(std::make_shared<state>()) {
  st_->opts = opts;
  st_->rng.seed(seed);
}

sim_file_system::~sim_file_system() = default;

void sim_file_system::enter(op_kind kind, const fs::path& p, uint64_t bytes) {
  std::function<void(const op&)> hook;
  {
    std::lock_guard<std::mutex> guard{st_->mtx};
    hook = st_->hook;
  }
  if (hook)
    hook(op{kind, p, bytes});
}

result<std::unique_ptr<store::writable_file>>
sim_file_system::open_for_write(const fs::path& file, open_mode mode) {
  enter(op_kind::open, file);
  auto k = key(file);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  if (k.empty())
    return err(std::errc::is_a_directory);
  if (auto p = s.parent_dir(k); !p)
    return p.error();
  std::shared_ptr<inode> f;
  if (auto n = s.find(k)) {
    if (n->dir)
      return err(std::errc::is_a_directory);
    f = n->file;
    if (mode == open_mode::create_truncate)
      s.add_pending(*f, data_op{true, 0, {}});
  } else {
    if (mode == open_mode::existing)
      return err(std::errc::no_such_file_or_directory);
    f = std::make_shared<inode>();
    s.log(meta_op{meta_op::create, k, {}, f});
  }
  return std::unique_ptr<store::writable_file>{
      new sim_file(st_, std::move(f), file, s.generation)};
}

result<std::string> sim_file_system::read_file(const fs::path& file) {
  enter(op_kind::read, file);
  auto k = key(file);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto n = s.find(k);
  if (!n)
    return err(std::errc::no_such_file_or_directory);
  if (n->dir)
    return err(std::errc::is_a_directory);
  ++s.counters.reads;
  s.counters.bytes_read += n->file->data.size();
  return n->file->data;
}

result<uint64_t> sim_file_system::file_size(const fs::path& file) {
  enter(op_kind::stat, file);
  auto k = key(file);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto n = s.find(k);
  if (!n)
    return err(std::errc::no_such_file_or_directory);
  if (n->dir)
    return err(std::errc::is_a_directory);
  return static_cast<uint64_t>(n->file->data.size());
}

result<bool> sim_file_system::exists(const fs::path& path) {
  enter(op_kind::stat, path);
  auto k = key(path);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  return s.find(k) != nullptr;
}

result<std::vector<std::string>> sim_file_system::list_directory(const fs::path& dir) {
  enter(op_kind::list, dir);
  auto k = key(dir);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto n = s.find(k);
  if (!n)
    return err(std::errc::no_such_file_or_directory);
  if (!n->dir)
    return err(std::errc::not_a_directory);
  std::vector<std::string> out;
  for (auto& d : descendants(s.live, k))
    if (parent(d) == k)
      out.push_back(name_of(d));
  return out;
}

result<void> sim_file_system::create_directories(const fs::path& dir) {
  enter(op_kind::mkdir, dir);
  auto k = key(dir);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  std::string at;
  for (auto& part : fs::path{k}) {
    at = at.empty() ? part.generic_string() : at + "/" + part.generic_string();
    if (auto n = s.find(at)) {
      if (!n->dir)
        return err(std::errc::not_a_directory);
      continue;
    }
    s.log(meta_op{meta_op::mkdir, at, {}, nullptr});
  }
  return outcome::success();
}

result<void> sim_file_system::rename(const fs::path& from, const fs::path& to) {
  enter(op_kind::rename, from);
  auto a = key(from), b = key(to);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto src = s.find(a);
  if (!src || a.empty())
    return err(std::errc::no_such_file_or_directory);
  if (auto p = s.parent_dir(b); !p)
    return p.error();
  if (a == b)
    return outcome::success();
  if (under(b, a))
    return err(std::errc::invalid_argument);
  if (auto dst = s.find(b)) {
    if (b.empty())
      return err(std::errc::device_or_resource_busy);
    if (src->dir && !dst->dir)
      return err(std::errc::not_a_directory);
    if (!src->dir && dst->dir)
      return err(std::errc::is_a_directory);
    if (dst->dir && !descendants(s.live, b).empty())
      return err(std::errc::directory_not_empty);
  }
  s.log(meta_op{meta_op::rename, a, b, nullptr});
  return outcome::success();
}

result<void> sim_file_system::remove(const fs::path& path) {
  enter(op_kind::remove, path);
  auto k = key(path);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto n = s.find(k);
  if (!n)
    return outcome::success();
  if (k.empty())
    return err(std::errc::device_or_resource_busy);
  if (n->dir && !descendants(s.live, k).empty())
    return err(std::errc::directory_not_empty);
  s.log(meta_op{meta_op::unlink, k, {}, nullptr});
  return outcome::success();
}

result<void> sim_file_system::remove_all(const fs::path& path) {
  enter(op_kind::remove, path);
  auto k = key(path);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  if (!s.find(k))
    return outcome::success();
  if (k.empty())
    return err(std::errc::device_or_resource_busy);
  // Deepest first, as a recursive removal unlinks them.
  auto doomed = descendants(s.live, k);
  std::sort(doomed.begin(), doomed.end(), std::greater<>{});
  for (auto& d : doomed)
    s.log(meta_op{meta_op::unlink, d, {}, nullptr});
  s.log(meta_op{meta_op::unlink, k, {}, nullptr});
  return outcome::success();
}

result<void> sim_file_system::sync_directory(const fs::path& dir) {
  enter(op_kind::sync_dir, dir);
  auto k = key(dir);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  auto n = s.find(k);
  if (!n)
    return err(std::errc::no_such_file_or_directory);
  if (!n->dir)
    return err(std::errc::not_a_directory);
  ++s.counters.dir_syncs;
  size_t upto = 0;
  for (size_t i = 0; i < s.journal.size(); ++i)
    if (touches(s.journal[i], k))
      upto = i + 1;
  for (size_t i = 0; i < upto; ++i)
    apply_op(s.durable, s.journal[i]);
  s.journal.erase(s.journal.begin(),
                  s.journal.begin() + static_cast<std::ptrdiff_t>(upto));
  return outcome::success();
}

result<std::unique_ptr<store::file_lock>>
sim_file_system::lock_exclusive(const fs::path& file) {
  enter(op_kind::lock, file);
  auto k = key(file);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (auto u = s.usable(s.generation); !u)
    return u.error();
  ++s.counters.operations;
  if (k.empty())
    return err(std::errc::is_a_directory);
  if (auto p = s.parent_dir(k); !p)
    return p.error();
  if (auto n = s.find(k)) {
    if (n->dir)
      return err(std::errc::is_a_directory);
  } else {
    s.log(meta_op{meta_op::create, k, {}, std::make_shared<inode>()});
  }
  if (s.locks.count(k))
    return store::errc::directory_in_use;
  auto id = s.next_lock++;
  s.locks[k] = id;
  return std::unique_ptr<store::file_lock>{new sim_lock(st_, k, id)};
}

void sim_file_system::crash() {
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (s.down)
    return;
  std::ostringstream what;
  auto n = s.journal.size();
  auto kept = s.below(n + 1);
  for (size_t i = 0; i < kept; ++i)
    apply_op(s.durable, s.journal[i]);
  s.journal.clear();
  what << "kept " << kept << "/" << n << " namespace ops; ";
  s.live = s.durable;
  // Files not reachable any more are gone; every reachable one is torn once
  // (by path order: deterministic).
  std::set<inode*> done;
  for (auto& [k, nd] : s.live)
    if (!nd.dir && nd.file && done.insert(nd.file.get()).second)
      what << s.tear(*nd.file, "/" + k);
  s.counters.unsynced_bytes = 0;
  s.locks.clear();
  ++s.generation;
  ++s.counters.crashes;
  s.down = true;
  s.last_crash = what.str();
}

void sim_file_system::kill_processes() {
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  if (s.down)
    return;
  s.locks.clear();
  ++s.generation;
  s.down = true;
}

void sim_file_system::restart() {
  std::lock_guard<std::mutex> guard{st_->mtx};
  st_->down = false;
}

bool sim_file_system::crashed() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->down;
}

std::string sim_file_system::last_crash() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->last_crash;
}

result<void> sim_file_system::flip_bit(const fs::path& file, uint64_t offset,
                                       unsigned bit) {
  auto k = key(file);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto n = st_->find(k);
  if (!n || n->dir)
    return err(std::errc::no_such_file_or_directory);
  auto& f = *n->file;
  if (offset >= f.data.size() || bit > 7)
    return err(std::errc::invalid_argument);
  auto mask = static_cast<char>(1u << bit);
  f.data[offset] ^= mask;
  if (offset < f.durable.size())
    f.durable[offset] ^= mask;
  return outcome::success();
}

std::optional<sim_file_system::flipped>
sim_file_system::flip_random_bit(const fs::path& under_path) {
  auto root = key(under_path);
  std::lock_guard<std::mutex> guard{st_->mtx};
  auto& s = *st_;
  // Synced bytes: a prefix of both contents where no unsynced write went.
  std::vector<std::pair<std::string, uint64_t>> candidates;
  uint64_t total = 0;
  for (auto& [k, nd] : s.live) {
    if (nd.dir || !(root.empty() || k == root || under(k, root)))
      continue;
    auto& f = *nd.file;
    uint64_t synced = std::min(f.data.size(), f.durable.size());
    for (auto& d : f.pending)
      synced = std::min(synced, d.offset);
    if (synced == 0)
      continue;
    candidates.emplace_back(k, synced);
    total += synced;
  }
  if (total == 0)
    return std::nullopt;
  auto pick = s.below(total);
  for (auto& [k, synced] : candidates) {
    if (pick >= synced) {
      pick -= synced;
      continue;
    }
    auto bit = static_cast<unsigned>(s.below(8));
    auto& f = *s.live[k].file;
    auto mask = static_cast<char>(1u << bit);
    f.data[pick] ^= mask;
    f.durable[pick] ^= mask;
    return flipped{fs::path{"/" + k}, pick, bit};
  }
  return std::nullopt;
}

void sim_file_system::set_hook(std::function<void(const op&)> hook) {
  std::lock_guard<std::mutex> guard{st_->mtx};
  st_->hook = std::move(hook);
}

sim_file_system::stats sim_file_system::get_stats() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  return st_->counters;
}

std::map<std::string, std::string> sim_file_system::files() const {
  std::lock_guard<std::mutex> guard{st_->mtx};
  std::map<std::string, std::string> out;
  for (auto& [k, nd] : st_->live)
    if (!nd.dir)
      out["/" + k] = nd.file->data;
  return out;
}

const char* to_string(sim_file_system::op_kind k) {
  using K = sim_file_system::op_kind;
  switch (k) {
  case K::open:
    return "open";
  case K::write:
    return "write";
  case K::truncate:
    return "truncate";
  case K::sync:
    return "sync";
  case K::close:
    return "close";
  case K::read:
    return "read";
  case K::stat:
    return "stat";
  case K::list:
    return "list";
  case K::mkdir:
    return "mkdir";
  case K::rename:
    return "rename";
  case K::remove:
    return "remove";
  case K::sync_dir:
    return "sync_dir";
  case K::lock:
    return "lock";
  }
  return "?";
}

} // namespace conclave::sim
