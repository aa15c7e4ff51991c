// job_store: the workflow actors' access to the store, as chains of
// asynchronous store_actor requests (no blocking, no threads: it runs the same
// on the test coordinator). One job change is one store transaction:
//
//   begin → [fenced: read the term row with an Update lock; a higher recorded
//   term aborts with stale_term, a lower one is raised] → read the job's
//   document (job record, step records, newest events; ONE row, see
//   store_layout.hpp) with an Update lock (every writer of a job queues on
//   that row) → mutate the view with a lifecycle function → write the
//   document, the events moved out of it and the index entries that changed
//   (layout::job_writes) → commit.
//
// Any failure aborts the transaction and reports a caf::error (workflow or
// store errors); nothing is written then.
//
// Round trips (batched, the default): each round trip is one op_batch message
// (protocols/store/batch.hpp). A change is two: begin + [term row] + the
// document, then every write + commit. A submission is one (an "absent" check
// on the job row, writes, commit); update_known() is one (one check that the
// document is still the bytes the caller knows, writes, commit) and falls back
// to update() when it is not; reads and scans are one.
//
// Not batched: requests that do not depend on each other's answers are sent
// together (pipelined): the term row and the document, then every write; the
// commit follows once every write was answered. A store runs one actor's
// requests in the order sent, and every key a job change touches is guarded by
// the document's Update lock, so nothing in a batch waits for a lock; should
// one op wait anyway, the next op of the same transaction fails with
// transaction_busy and the whole change aborts (nothing written).
#pragma once

#include "actors/store/store_interface.hpp"
#include "actors/workflow/type_ids.hpp"
#include "actors/workflow/workflow_probe.hpp"
#include "protocols/store/batch.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <caf/actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace conclave::workflow {

using kv_items = std::vector<std::pair<std::string, std::string>>;

/// A job change that committed.
struct job_change {
  effects eff;
  job_view view;
};

template <class Self>
class job_store {
public:
  using mutate_fn = std::function<result<effects>(job_view&)>;
  using change_fn = std::function<void(caf::error, job_change)>;

  /// `batched` (the default): every store round trip is one op_batch
  /// message. Otherwise one request per operation, sent together when
  /// `pipelined`, else one per round trip (what job changes cost before;
  /// the benchmark runs them side by side).
  job_store(Self* self, store::store_actor st, bool pipelined = true,
            uint32_t lock_timeout_ms = 1000, bool batched = true)
      : self_(self), store_(std::move(st)), timeout_ms_(lock_timeout_ms),
        pipelined_(pipelined), batched_(batched) {}

  const store::store_actor& handle() const { return store_; }

  /// Where committed changes report job and step state changes.
  void set_probe(workflow_probe* p) { probe_ = p; }

  /// Where committed changes publish their events, as (events_atom,
  /// vector<job_event>) (a client; none if null).
  void set_events(caf::actor hub) { events_ = std::move(hub); }

  /// Creates (or checks) every workflow collection.
  void open_all(std::function<void(caf::error)> done) {
    auto left = std::make_shared<size_t>(layout::all().size());
    auto failed = std::make_shared<bool>(false);
    for (const char* name : layout::all()) {
      self_
          ->request(store_, caf::infinite, store_atoms::open_atom_v, std::string{name},
                    store::collection_kind::dictionary, std::string{"bytes"},
                    std::string{"bytes"})
          .then(
              [=](bool) {
                if (--*left == 0 && !*failed)
                  done(caf::error{});
              },
              [=](caf::error& e) {
                if (!*failed) {
                  *failed = true;
                  done(std::move(e));
                }
              });
    }
  }

  /// Changes one job in one transaction (see the header comment). `fence`:
  /// the supervisor term the write is stamped with.
  void update(const job_id& id, std::optional<term> fence, mutate_fn mutate,
              change_fn done) {
    update_tries(id, fence, std::move(mutate), std::move(done), conflict_retries);
  }

  /// How often update() runs a change again after a lock timeout (on the
  /// replicated store: another writer committed first), from a fresh read.
  static constexpr int conflict_retries = 8;

private:
  void update_tries(const job_id& id, std::optional<term> fence, mutate_fn mutate,
                    change_fn done, int tries) {
    if (tries > 0)
      done = [this, id, fence, mutate, done = std::move(done), tries](caf::error e,
                                                                      job_change c) {
        if (e && store::to_errc(e) == store::errc::lock_timeout)
          return update_tries(id, fence, mutate, done, tries - 1);
        done(std::move(e), std::move(c));
      };
    update_once(id, fence, std::move(mutate), std::move(done));
  }

  void update_once(const job_id& id, std::optional<term> fence, mutate_fn mutate,
                   change_fn done) {
    auto c = std::make_shared<update_ctx>();
    c->id = id;
    c->fence = fence;
    c->mutate = std::move(mutate);
    c->done = std::move(done);
    if (batched_)
      return read_job_batched(c);
    begin([this, c](caf::error e, store::txn_id t) {
      if (e)
        return c->done(std::move(e), {});
      c->txn = t;
      read_job(c);
    });
  }

public:
  /// Like update(), for a caller that knows the job as it was committed last
  /// (`known`, e.g. the view its own claim wrote, with its document's events):
  /// ONE message that checks in the store that the job's document is still
  /// exactly those bytes (Update lock), writes and commits. If it changed
  /// since, the batch runs no write and the change is made by update()
  /// instead, which calls `mutate` again on the current view.
  void update_known(const job_view& known, mutate_fn mutate, change_fn done) {
    auto id = known.job.id;
    if (!batched_)
      return update(id, std::nullopt, std::move(mutate), std::move(done));
    auto before = std::make_shared<job_view>(known);
    auto after = known;
    auto eff = mutate(after);
    // The known document's bytes: what the check expects, and what
    // job_writes compares the new encoding with (encoded once).
    auto doc = encode_doc(known);
    auto ws = eff ? layout::job_writes(&known, after, eff.value(), &doc)
                  : std::vector<layout::write>{};
    if (ws.empty()) // an error or nothing to write: decide on the current view
      return update(id, std::nullopt, std::move(mutate), std::move(done));
    store::op_batch b;
    add_check(b, known, std::move(doc));
    b.ops = write_requests(std::move(ws));
    b.commit = true;
    auto change = std::make_shared<job_change>(job_change{std::move(eff.value()), after});
    run_batch(std::move(b),
              [this, id, before, change, mutate = std::move(mutate),
               done = std::move(done)](caf::error e, store::batch_result r) mutable {
                if (e)
                  return done(std::move(e), {});
                if (r.failed_check)
                  return update(id, std::nullopt, std::move(mutate), std::move(done));
                committed(*before, *change);
                done(caf::error{}, std::move(*change));
              });
  }

  /// One change of update_known_many(): the job as its caller knows it was
  /// committed last, and what to do with it.
  struct known_item {
    std::shared_ptr<const job_view> known;
    mutate_fn mutate;
    change_fn done;
  };

  /// update_known() for several jobs in ONE message and one transaction
  /// (batched; otherwise one update_known() each): a grouped op_batch with
  /// one group per job (its check that the document is still the known
  /// bytes, its writes), in job id order, then the commit. A job whose
  /// check fails changes nothing in that batch and is changed by its own
  /// update() afterwards (mutate called again on the current view), so one
  /// stale job never blocks the others. At most one item per job (the
  /// checks of a batch all run before its writes). `answered` runs once the
  /// batch's answer is in (fallbacks may still be running).
  void update_known_many(std::vector<known_item> items,
                         std::function<void()> answered = {}) {
    if (!batched_) {
      for (auto& it : items)
        update_known(*it.known, std::move(it.mutate), std::move(it.done));
      if (answered)
        answered();
      return;
    }
    std::sort(items.begin(), items.end(), [](const known_item& a, const known_item& b) {
      return a.known->job.id.value < b.known->job.id.value;
    });
    struct pending {
      known_item item;
      std::shared_ptr<job_change> change; // null: nothing to write, update()
    };
    auto all = std::make_shared<std::vector<pending>>();
    all->reserve(items.size());
    store::op_batch b;
    for (auto& it : items) {
      auto& known = *it.known;
      auto after = known;
      auto eff = it.mutate(after);
      auto doc = encode_doc(known);
      auto ws = eff ? layout::job_writes(&known, after, eff.value(), &doc)
                    : std::vector<layout::write>{};
      pending p{std::move(it), nullptr};
      if (!ws.empty()) {
        store::batch_group g;
        add_check(b, known, std::move(doc));
        g.checks = 1;
        auto rs = write_requests(std::move(ws));
        g.ops = static_cast<uint32_t>(rs.size());
        b.ops.insert(b.ops.end(), std::make_move_iterator(rs.begin()),
                     std::make_move_iterator(rs.end()));
        b.groups.push_back(g);
        p.change = std::make_shared<job_change>(
            job_change{std::move(eff.value()), std::move(after)});
      }
      all->push_back(std::move(p));
    }
    auto fallback = [this](pending& p) {
      update(p.item.known->job.id, std::nullopt, std::move(p.item.mutate),
             std::move(p.item.done));
    };
    if (b.groups.empty()) { // an error or nothing to write: decide on the current view
      for (auto& p : *all)
        fallback(p);
      if (answered)
        answered();
      return;
    }
    b.commit = true;
    run_batch(std::move(b), [this, all, fallback,
                             answered](caf::error e, store::batch_result r) mutable {
      uint32_t group = 0;
      size_t failed = 0;
      for (auto& p : *all) {
        if (!p.change) {
          fallback(p);
          continue;
        }
        auto g = group++;
        if (e) {
          p.item.done(e, {});
          continue;
        }
        if (failed < r.failed_groups.size() && r.failed_groups[failed] == g) {
          ++failed;
          fallback(p);
          continue;
        }
        committed(*p.item.known, *p.change);
        p.item.done(caf::error{}, std::move(*p.change));
      }
      if (answered)
        answered();
    });
  }

  using many_fn = std::function<void(std::vector<std::pair<caf::error, job_change>>)>;

  /// Changes several jobs in ONE transaction and two messages (batched only;
  /// otherwise one update() per job): every job's document with an Update
  /// lock, in id order (so that two such transactions cannot deadlock);
  /// `mutate` on each view; every write and the commit. A job whose `mutate`
  /// fails, or that is gone, changes nothing and gets its error. `done` gets
  /// one result per id, in the ids' order.
  void update_many(std::vector<job_id> ids, mutate_fn mutate, many_fn done) {
    auto n = ids.size();
    using results = std::vector<std::pair<caf::error, job_change>>;
    auto out = std::make_shared<results>(n);
    if (!batched_ || n <= 1) {
      if (n == 0)
        return done({});
      auto left = std::make_shared<size_t>(n);
      for (size_t i = 0; i < n; ++i)
        update(ids[i], std::nullopt, mutate,
               [out, left, i, done](caf::error e, job_change c) {
                 (*out)[i] = {std::move(e), std::move(c)};
                 if (--*left == 0)
                   done(std::move(*out));
               });
      return;
    }
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return ids[a].value < ids[b].value; });
    store::op_batch b;
    // One read (and one change) per job: a job named twice would be changed
    // twice from the same read, e.g. claimed twice under one attempt (two
    // ready rows for one job, which only index damage makes). Its later
    // copies get bad_argument.
    constexpr auto repeated = std::numeric_limits<size_t>::max();
    std::vector<size_t> op_of(n);
    const job_id* last = nullptr;
    for (auto i : order) {
      if (last && *last == ids[i]) {
        op_of[i] = repeated;
        (*out)[i].first = make_error(errc::bad_argument);
        continue;
      }
      last = &ids[i];
      auto r = request({}, store::operation::try_get, layout::jobs, ids[i].value);
      r.mode = store::read_mode::update;
      op_of[i] = b.ops.size();
      b.ops.push_back(std::move(r));
    }
    run_batch(std::move(b),
              [this, n, op_of, out, mutate, done](caf::error e, store::batch_result r) {
                if (e) {
                  for (auto& x : *out)
                    x.first = e;
                  return done(std::move(*out));
                }
                std::vector<layout::write> ws;
                auto befores = std::make_shared<std::vector<std::optional<job_view>>>(n);
                for (size_t i = 0; i < n; ++i) {
                  if (op_of[i] == std::numeric_limits<size_t>::max())
                    continue; // a repeated id, answered already
                  auto& jr = r.results[op_of[i]];
                  if (!jr.found) {
                    (*out)[i].first = make_error(errc::unknown_job);
                    continue;
                  }
                  auto d = decode_doc(jr.value);
                  if (!d) {
                    (*out)[i].first = make_error(errc::corrupt_record);
                    continue;
                  }
                  auto& v = d.value();
                  auto before = v;
                  auto eff = mutate(v);
                  if (!eff) {
                    (*out)[i].first = to_caf_error(eff.error());
                    continue;
                  }
                  // The document's bytes as read: job_writes compares with them.
                  auto more = layout::job_writes(&before, v, eff.value(), &jr.value);
                  ws.insert(ws.end(), std::make_move_iterator(more.begin()),
                            std::make_move_iterator(more.end()));
                  (*befores)[i] = std::move(before);
                  (*out)[i].second = job_change{std::move(eff.value()), std::move(v)};
                }
                if (ws.empty()) {
                  abort(r.txn);
                  return done(std::move(*out));
                }
                store::op_batch w;
                w.txn = r.txn;
                w.ops = write_requests(std::move(ws));
                w.commit = true;
                run_batch(std::move(w),
                          [this, out, befores, done](caf::error e, store::batch_result) {
                            for (size_t i = 0; i < out->size(); ++i) {
                              if (!(*befores)[i])
                                continue;
                              if (e)
                                (*out)[i].first = e;
                              else
                                committed(*(*befores)[i], (*out)[i].second);
                            }
                            done(std::move(*out));
                          });
              });
  }

  /// Writes a new job (submission) unless its id exists: one transaction.
  void create(job_view v, effects eff, std::function<void(caf::error)> done) {
    auto view = std::make_shared<job_view>(std::move(v));
    auto ef = std::make_shared<effects>(std::move(eff));
    if (batched_) {
      // One message: "the job row is absent", every write, commit.
      store::op_batch b;
      b.checks.push_back(store::batch_check{
          layout::jobs, view->job.id.value, store::check_kind::absent, {}});
      b.ops = write_requests(layout::job_writes(std::nullopt, *view, *ef));
      b.commit = true;
      return run_batch(std::move(b),
                       [this, view, ef, done](caf::error e, store::batch_result r) {
                         if (!e && r.failed_check)
                           e = make_error(errc::job_exists);
                         if (!e) {
                           report(nullptr, *view);
                           publish(ef->events);
                         }
                         done(std::move(e));
                       });
    }
    begin([=](caf::error e, store::txn_id t) {
      if (e)
        return done(std::move(e));
      get(t, layout::jobs, view->job.id.value, store::read_mode::update,
          [=](caf::error e, store::op_result r) {
            if (e)
              return fail(t, std::move(e), [done](caf::error x) { done(x); });
            if (r.found)
              return fail(t, make_error(errc::job_exists),
                          [done](caf::error x) { done(x); });
            auto ws = std::make_shared<std::vector<layout::write>>(
                layout::job_writes(std::nullopt, *view, *ef));
            write_all(t, ws, 0, [=](caf::error e) {
              if (e)
                return fail(t, std::move(e), [done](caf::error x) { done(x); });
              commit(t, [this, view, ef, done](caf::error e) {
                if (!e) {
                  report(nullptr, *view);
                  publish(ef->events);
                }
                done(std::move(e));
              });
            });
          });
    });
  }

  /// One submission of create_many().
  struct create_item {
    job_view view;
    effects eff;
    std::function<void(caf::error)> done;
  };

  /// create() for several new jobs in ONE message and one transaction
  /// (batched; otherwise one create() each): a grouped op_batch with one
  /// group per job ("the job row is absent", its writes), then the commit.
  /// A job whose id exists gets job_exists and writes nothing; the others
  /// are written. The ids must differ (the checks all run before the
  /// writes). `answered` runs once the batch's answer is in.
  void create_many(std::vector<create_item> items, std::function<void()> answered = {}) {
    if (!batched_ || items.size() <= 1) {
      auto left = std::make_shared<size_t>(items.size());
      if (items.empty() && answered)
        return answered();
      for (auto& it : items)
        create(std::move(it.view), std::move(it.eff),
               [left, answered, done = std::move(it.done)](caf::error e) {
                 done(std::move(e));
                 if (--*left == 0 && answered)
                   answered();
               });
      return;
    }
    auto all = std::make_shared<std::vector<create_item>>(std::move(items));
    store::op_batch b;
    for (auto& it : *all) {
      b.checks.push_back(store::batch_check{
          layout::jobs, it.view.job.id.value, store::check_kind::absent, {}});
      auto rs = write_requests(layout::job_writes(std::nullopt, it.view, it.eff));
      b.groups.push_back(store::batch_group{1, static_cast<uint32_t>(rs.size())});
      b.ops.insert(b.ops.end(), std::make_move_iterator(rs.begin()),
                   std::make_move_iterator(rs.end()));
    }
    b.commit = true;
    run_batch(std::move(b), [this, all, answered](caf::error e, store::batch_result r) {
      size_t failed = 0;
      for (uint32_t g = 0; g < all->size(); ++g) {
        auto& it = (*all)[g];
        if (e) {
          it.done(e);
          continue;
        }
        if (failed < r.failed_groups.size() && r.failed_groups[failed] == g) {
          ++failed;
          it.done(make_error(errc::job_exists));
          continue;
        }
        report(nullptr, it.view);
        publish(it.eff.events);
        it.done(caf::error{});
      }
      if (answered)
        answered();
    });
  }

  /// A job document as read: unknown_job if absent, corrupt_record if it
  /// does not decode; else the view, without the document's events.
  static caf::error view_of(const store::op_result& r, job_view& out) {
    if (!r.found)
      return make_error(errc::unknown_job);
    auto d = decode_doc(r.value);
    if (!d)
      return make_error(errc::corrupt_record);
    out = std::move(d.value());
    out.events.clear();
    return {};
  }

  /// The documents of `ids` as read() gives them (snapshot reads, without
  /// their events), `per_batch` per op_batch message, one message in flight
  /// at a time: `done` gets one entry per id, empty for a job the store does
  /// not have, or the first error: the store's, or corrupt_record for a
  /// document that does not decode (a damaged job is reported, not left
  /// out). For queries over many jobs (list, explain): one request per job
  /// cost O(jobs in flight) per reply in CAF 0.17's response table, so
  /// 100,000 jobs took ≈ 5 s.
  void
  read_many(std::vector<job_id> ids,
            std::function<void(caf::error, std::vector<std::optional<job_view>>)> done,
            size_t per_batch = 512) {
    struct state {
      std::vector<job_id> ids;
      std::vector<std::optional<job_view>> out;
      size_t next = 0;
      std::function<void(caf::error, std::vector<std::optional<job_view>>)> done;
    };
    auto st = std::make_shared<state>();
    st->out.resize(ids.size());
    st->ids = std::move(ids);
    st->done = std::move(done);
    per_batch = std::max<size_t>(1, per_batch);
    // The function holds itself weakly; the batch in flight holds it.
    auto step = std::make_shared<std::function<void()>>();
    std::weak_ptr<std::function<void()>> weak = step;
    *step = [this, st, weak, per_batch] {
      if (st->next >= st->ids.size())
        return st->done(caf::error{}, std::move(st->out));
      auto step = weak.lock();
      auto from = st->next;
      auto to = std::min(st->ids.size(), from + per_batch);
      st->next = to;
      store::op_batch b;
      for (auto i = from; i < to; ++i) {
        auto r = request({}, store::operation::try_get, layout::jobs, st->ids[i].value);
        r.mode = store::read_mode::snapshot;
        b.ops.push_back(std::move(r));
      }
      b.commit = true; // read-only: nothing is logged
      run_batch(std::move(b), [st, step, from](caf::error e, store::batch_result r) {
        if (e)
          return st->done(std::move(e), {});
        for (size_t k = 0; k < r.results.size(); ++k) {
          if (!r.results[k].found)
            continue;
          job_view v;
          if (auto err = view_of(r.results[k], v))
            return st->done(std::move(err), {});
          st->out[from + k] = std::move(v);
        }
        (*step)();
      });
    };
    (*step)();
  }

  /// Reads a job as committed (snapshot, no locks): its document, without
  /// the document's events (events() has them).
  void read(const job_id& id, std::function<void(caf::error, job_view)> done) {
    auto finish = [done](caf::error e, const store::op_result& r) {
      job_view v;
      if (!e)
        e = view_of(r, v);
      if (e)
        return done(std::move(e), {});
      done(caf::error{}, std::move(v));
    };
    if (batched_) {
      store::op_batch b;
      auto jr = request({}, store::operation::try_get, layout::jobs, id.value);
      jr.mode = store::read_mode::snapshot;
      b.ops.push_back(std::move(jr));
      b.commit = true; // read-only: nothing is logged
      return run_batch(std::move(b), [finish](caf::error e, store::batch_result r) {
        if (e)
          return finish(std::move(e), {});
        finish(caf::error{}, r.results[0]);
      });
    }
    begin([=](caf::error e, store::txn_id t) {
      if (e)
        return done(std::move(e), {});
      get(t, layout::jobs, id.value, store::read_mode::snapshot,
          [=](caf::error e, store::op_result r) {
            abort(t);
            finish(std::move(e), r);
          });
    });
  }

  /// A job's events from sequence `from` on, as committed (one snapshot): the
  /// wf.events rows, the document's events, and the "received" event derived
  /// from the job record (layout::received_event), in seq order, each once.
  /// An unknown job has none.
  void events(const job_id& id, uint64_t from,
              std::function<void(caf::error, std::vector<job_event>)> done) {
    auto range = job_key_range(id);
    auto finish = [done, from](caf::error e, const store::op_result& job,
                               const kv_items& items) {
      if (e)
        return done(std::move(e), {});
      std::vector<job_event> rows;
      rows.reserve(items.size());
      for (auto& [k, v] : items) {
        auto ev = decode_event(v);
        if (!ev)
          return done(make_error(errc::corrupt_record), {});
        rows.push_back(std::move(ev.value()));
      }
      if (!job.found)
        return done(caf::error{}, std::move(rows));
      auto d = decode_doc(job.value);
      if (!d)
        return done(make_error(errc::corrupt_record), {});
      auto out = layout::merge_events(std::move(rows), d.value().events, from);
      // Stores written before the received event was derived keep it stored.
      bool stored = !out.empty() && out.front().seq == 1;
      if (from <= 1 && !stored)
        out.insert(out.begin(), layout::received_event(d.value().job));
      done(caf::error{}, std::move(out));
    };
    auto jr = request({}, store::operation::try_get, layout::jobs, id.value);
    jr.mode = store::read_mode::snapshot;
    auto er = enumerate_request(layout::events, event_key(id, from), range.second);
    if (batched_) {
      store::op_batch b;
      b.ops.push_back(std::move(jr));
      b.ops.push_back(std::move(er));
      b.commit = true; // read-only: nothing is logged
      return run_batch(std::move(b), [finish](caf::error e, store::batch_result r) {
        if (e)
          return finish(std::move(e), {}, {});
        finish(caf::error{}, r.results[0], r.results[1].items);
      });
    }
    begin([=](caf::error e, store::txn_id t) mutable {
      if (e)
        return done(std::move(e), {});
      jr.txn = t;
      er.txn = t;
      run_all({jr, er}, [this, t, finish](caf::error e, std::vector<store::op_result> r) {
        abort(t);
        if (e)
          return finish(std::move(e), {}, {});
        finish(caf::error{}, r[0], r[1].items);
      });
    });
  }

  /// Enumerates [from, to) of a collection (snapshot; empty bound = open),
  /// at most `limit` items, the first by key (0: all).
  void scan(const std::string& collection, std::string from, std::string to,
            std::function<void(caf::error, kv_items)> done, uint32_t limit = 0) {
    if (batched_) {
      store::op_batch b;
      b.ops.push_back(enumerate_request(collection, from, to));
      b.ops.back().limit = limit;
      b.commit = true; // read-only: nothing is logged
      return run_batch(std::move(b), [done](caf::error e, store::batch_result r) {
        if (e)
          return done(std::move(e), {});
        done(caf::error{}, std::move(r.results[0].items));
      });
    }
    begin([=](caf::error e, store::txn_id t) {
      if (e)
        return done(std::move(e), {});
      enumerate(
          t, collection, from, to,
          [=](caf::error e, kv_items items) {
            abort(t);
            done(std::move(e), std::move(items));
          },
          limit);
    });
  }

private:
  struct update_ctx {
    job_id id;
    std::optional<term> fence;
    mutate_fn mutate;
    change_fn done;
    store::txn_id txn;
    std::vector<layout::write> pre; // the term row, if raised
    job_view view;
    std::string stored; // the document's bytes as read
  };
  using ctx_ptr = std::shared_ptr<update_ctx>;

  store::op_request request(store::txn_id t, store::operation op,
                            const std::string& collection, std::string key = {},
                            std::string value = {}) {
    store::op_request r;
    r.txn = t;
    r.op = op;
    r.collection = collection;
    r.key = std::move(key);
    r.value = std::move(value);
    return r;
  }

  /// Checks that the document of `v` still holds `doc`.
  static void add_check(store::op_batch& b, const job_view& v, std::string doc) {
    b.checks.push_back(store::batch_check{layout::jobs, v.job.id.value,
                                          store::check_kind::equals, std::move(doc)});
  }

  void begin(std::function<void(caf::error, store::txn_id)> f) {
    self_->request(store_, caf::infinite, store_atoms::begin_atom_v)
        .then([f](store::txn_id t) { f(caf::error{}, t); },
              [f](caf::error& e) { f(std::move(e), {}); });
  }

  void run(store::op_request r, std::function<void(caf::error, store::op_result)> f) {
    self_->request(store_, caf::infinite, std::move(r), timeout_ms_)
        .then([f](store::op_result& x) { f(caf::error{}, std::move(x)); },
              [f](caf::error& e) { f(std::move(e), {}); });
  }

  void get(store::txn_id t, const std::string& collection, std::string key,
           store::read_mode mode, std::function<void(caf::error, store::op_result)> f) {
    auto r = request(t, store::operation::try_get, collection, std::move(key));
    r.mode = mode;
    run(std::move(r), std::move(f));
  }

  store::op_request enumerate_request(const std::string& collection, std::string from,
                                      std::string to) {
    auto r = request({}, store::operation::enumerate, collection);
    r.has_from = !from.empty();
    r.from = std::move(from);
    r.has_to = !to.empty();
    r.to = std::move(to);
    return r;
  }

  /// One op_batch round trip. An error means its transaction was aborted.
  void run_batch(store::op_batch b,
                 std::function<void(caf::error, store::batch_result)> f) {
    self_->request(store_, caf::infinite, std::move(b), timeout_ms_)
        .then([f](store::batch_result& r) { f(caf::error{}, std::move(r)); },
              [f](caf::error& e) { f(std::move(e), {}); });
  }

  std::vector<store::op_request> write_requests(std::vector<layout::write> ws) {
    std::vector<store::op_request> rs;
    rs.reserve(ws.size());
    for (auto& w : ws)
      rs.push_back(request(
          {}, w.remove ? store::operation::try_remove : store::operation::add_or_update,
          w.collection, std::move(w.key), std::move(w.value)));
    return rs;
  }

  void enumerate(store::txn_id t, const std::string& collection, std::string from,
                 std::string to, std::function<void(caf::error, kv_items)> f,
                 uint32_t limit = 0) {
    auto r = enumerate_request(collection, std::move(from), std::move(to));
    r.txn = t;
    r.limit = limit;
    run(std::move(r),
        [f](caf::error e, store::op_result x) { f(std::move(e), std::move(x.items)); });
  }

  void abort(store::txn_id t) {
    self_->request(store_, caf::infinite, store_atoms::abort_atom_v, t)
        .then([](bool) {}, [](caf::error&) {});
  }

  void commit(store::txn_id t, std::function<void(caf::error)> f) {
    self_->request(store_, caf::infinite, store_atoms::commit_atom_v, t)
        .then([f](uint64_t) { f(caf::error{}); },
              [f](caf::error& e) { f(std::move(e)); });
  }

  void fail(store::txn_id t, caf::error e, std::function<void(caf::error)> f) {
    abort(t);
    f(std::move(e));
  }

  /// Sends every request of `rs` at once; `f` gets the results in order once
  /// all are answered, or the first error.
  void run_all(std::vector<store::op_request> rs,
               std::function<void(caf::error, std::vector<store::op_result>)> f) {
    if (rs.empty())
      return f(caf::error{}, {});
    if (!pipelined_) {
      auto all = std::make_shared<std::vector<store::op_request>>(std::move(rs));
      auto out = std::make_shared<std::vector<store::op_result>>();
      return run_in_turn(all, out, std::move(f));
    }
    struct batch {
      std::vector<store::op_result> out;
      size_t left = 0;
      caf::error first;
    };
    auto b = std::make_shared<batch>();
    b->out.resize(rs.size());
    b->left = rs.size();
    for (size_t i = 0; i < rs.size(); ++i)
      run(std::move(rs[i]), [b, i, f](caf::error e, store::op_result r) {
        if (e && !b->first)
          b->first = std::move(e);
        else
          b->out[i] = std::move(r);
        if (--b->left == 0)
          f(std::move(b->first), std::move(b->out));
      });
  }

  /// run_all without pipelining: the next request once the last is answered.
  void run_in_turn(std::shared_ptr<std::vector<store::op_request>> all,
                   std::shared_ptr<std::vector<store::op_result>> out,
                   std::function<void(caf::error, std::vector<store::op_result>)> f) {
    auto i = out->size();
    if (i == all->size())
      return f(caf::error{}, std::move(*out));
    run(std::move((*all)[i]), [this, all, out, f](caf::error e, store::op_result r) {
      if (e)
        return f(std::move(e), {});
      out->push_back(std::move(r));
      run_in_turn(all, out, f);
    });
  }

  void write_all(store::txn_id t, std::shared_ptr<std::vector<layout::write>> ws, size_t,
                 std::function<void(caf::error)> f) {
    std::vector<store::op_request> rs;
    rs.reserve(ws->size());
    for (auto& w : *ws)
      rs.push_back(request(
          t, w.remove ? store::operation::try_remove : store::operation::add_or_update,
          w.collection, std::move(w.key), std::move(w.value)));
    run_all(std::move(rs),
            [f](caf::error e, std::vector<store::op_result>) { f(std::move(e)); });
  }

  void publish(const std::vector<job_event>& evs) {
    if (events_ && !evs.empty())
      caf::anon_send(events_, workflow_atoms::events_atom_v, evs);
  }

  /// Job and step state changes of a committed change (no `before`: new job).
  void report(const job_view* before, const job_view& after) {
    if (!before || before->job.state != after.job.state)
      probe_->job_state_changed(before ? std::optional<job_state>{before->job.state}
                                       : std::nullopt,
                                after.job.state);
    for (size_t i = 0; i < after.steps.size(); ++i) {
      auto now = after.steps[i].state;
      if (!before || i >= before->steps.size())
        probe_->step_state_changed(std::nullopt, now);
      else if (before->steps[i].state != now)
        probe_->step_state_changed(before->steps[i].state, now);
    }
  }

  void fail_update(const ctx_ptr& c, caf::error e) {
    abort(c->txn);
    c->done(std::move(e), {});
  }

  /// The recorded term (`tr`) against the change's fence: stale_term if
  /// higher (false, the change failed), raised if lower.
  bool take_term(const ctx_ptr& c, const store::op_result& tr) {
    term recorded;
    if (tr.found) {
      auto t = decode_term(tr.value);
      if (!t) {
        fail_update(c, make_error(errc::corrupt_record));
        return false;
      }
      recorded = t.value();
    }
    if (*c->fence < recorded) {
      fail_update(c, make_error(errc::stale_term));
      return false;
    }
    if (recorded < *c->fence || !tr.found)
      c->pre.push_back(
          layout::write{layout::meta, layout::term_key, false, encode_term(*c->fence)});
    return true;
  }

  /// Decodes the job's document into c->view; false (and the change failed)
  /// if it is missing or corrupt.
  bool take_doc(const ctx_ptr& c, store::op_result& jr) {
    if (!jr.found) {
      fail_update(c, make_error(errc::unknown_job));
      return false;
    }
    auto d = decode_doc(jr.value);
    if (!d) {
      fail_update(c, make_error(errc::corrupt_record));
      return false;
    }
    c->view = std::move(d.value());
    c->stored = std::move(jr.value);
    return true;
  }

  /// The term row (fenced changes) and the document, both with an Update
  /// lock, in one round trip.
  void read_job(const ctx_ptr& c) {
    std::vector<store::op_request> rs;
    if (c->fence) {
      auto r = request(c->txn, store::operation::try_get, layout::meta, layout::term_key);
      r.mode = store::read_mode::update;
      rs.push_back(std::move(r));
    }
    auto r = request(c->txn, store::operation::try_get, layout::jobs, c->id.value);
    r.mode = store::read_mode::update;
    rs.push_back(std::move(r));
    run_all(std::move(rs), [this, c](caf::error e, std::vector<store::op_result> out) {
      if (e)
        return fail_update(c, std::move(e));
      if (c->fence && !take_term(c, out.front()))
        return;
      if (take_doc(c, out.back()))
        apply(c);
    });
  }

  void apply(const ctx_ptr& c) {
    auto before = std::make_shared<job_view>(c->view);
    auto eff = c->mutate(c->view);
    if (!eff)
      return fail_update(c, to_caf_error(eff.error()));
    auto ws = std::make_shared<std::vector<layout::write>>(std::move(c->pre));
    auto more = layout::job_writes(before.get(), c->view, eff.value(), &c->stored);
    ws->insert(ws->end(), more.begin(), more.end());
    auto change =
        std::make_shared<job_change>(job_change{std::move(eff.value()), c->view});
    if (ws->empty()) { // nothing changed (a stale outcome): nothing to log
      abort(c->txn);
      return c->done(caf::error{}, std::move(*change));
    }
    write_all(c->txn, ws, 0, [this, c, change, before](caf::error e) {
      if (e)
        return fail_update(c, std::move(e));
      commit(c->txn, [this, c, change, before](caf::error e) {
        if (e)
          return c->done(std::move(e), {});
        committed(*before, *change);
        c->done(caf::error{}, std::move(*change));
      });
    });
  }

  // -- batched job changes: two messages --

  /// Message 1: begin, [term row], the document (both with an Update lock);
  /// the transaction stays open.
  void read_job_batched(const ctx_ptr& c) {
    store::op_batch b;
    if (c->fence) {
      auto r = request({}, store::operation::try_get, layout::meta, layout::term_key);
      r.mode = store::read_mode::update;
      b.ops.push_back(std::move(r));
    }
    auto r = request({}, store::operation::try_get, layout::jobs, c->id.value);
    r.mode = store::read_mode::update;
    b.ops.push_back(std::move(r));
    run_batch(std::move(b), [this, c](caf::error e, store::batch_result r) {
      if (e)
        return c->done(std::move(e), {});
      c->txn = r.txn;
      if (c->fence && !take_term(c, r.results.front()))
        return;
      if (take_doc(c, r.results.back()))
        apply_batched(c);
    });
  }

  /// Message 2: every write and the commit.
  void apply_batched(const ctx_ptr& c) {
    auto before = std::make_shared<job_view>(c->view);
    auto eff = c->mutate(c->view);
    if (!eff)
      return fail_update(c, to_caf_error(eff.error()));
    auto ws = std::move(c->pre);
    auto more = layout::job_writes(before.get(), c->view, eff.value(), &c->stored);
    ws.insert(ws.end(), std::make_move_iterator(more.begin()),
              std::make_move_iterator(more.end()));
    auto change =
        std::make_shared<job_change>(job_change{std::move(eff.value()), c->view});
    if (ws.empty()) { // nothing changed (a stale outcome): nothing to log
      abort(c->txn);
      return c->done(caf::error{}, std::move(*change));
    }
    store::op_batch b;
    b.txn = c->txn;
    b.ops = write_requests(std::move(ws));
    b.commit = true;
    run_batch(std::move(b), [this, c, change, before](caf::error e, store::batch_result) {
      if (e)
        return c->done(std::move(e), {});
      committed(*before, *change);
      c->done(caf::error{}, std::move(*change));
    });
  }

  /// What a committed change reports and publishes.
  void committed(const job_view& before, const job_change& change) {
    report(&before, change.view);
    for (auto& ev : change.eff.events)
      if (ev.kind == event_kind::compensating)
        probe_->compensation_started();
    publish(change.eff.events);
  }

  Self* self_;
  store::store_actor store_;
  uint32_t timeout_ms_;
  bool pipelined_;
  bool batched_;
  workflow_probe* probe_ = &null_workflow_probe();
  caf::actor events_;
};

} // namespace conclave::workflow
