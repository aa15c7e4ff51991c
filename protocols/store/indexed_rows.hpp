// indexed_rows: the rows of one dictionary collection in key order (a
// std::map: enumerate, key ranges and checkpoints walk it) plus a hash index
// over the same map nodes for lookups by exact key (try_get, every write, a
// commit applying its ops): one hash probe instead of ~log2(rows) key
// comparisons, which were the store host's largest single cost in the
// workflow benchmark's profile.
//
// The index holds views of the map's keys and iterators to its nodes; both
// stay valid until that node is erased (also when the container is moved),
// and every erase goes through erase(), which drops the index entry first.
// Not copyable: a copied index would point into the source's nodes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace conclave::store {

template <class Value>
class indexed_rows {
public:
  using map_type = std::map<std::string, Value>;
  using iterator = typename map_type::iterator;
  using const_iterator = typename map_type::const_iterator;

  indexed_rows() = default;
  indexed_rows(indexed_rows&&) noexcept = default;
  indexed_rows& operator=(indexed_rows&&) noexcept = default;
  indexed_rows(const indexed_rows&) = delete;
  indexed_rows& operator=(const indexed_rows&) = delete;

  // -- lookups by exact key: the hash index -----------------------------------

  iterator find(std::string_view key) {
    auto i = index_.find(key);
    return i == index_.end() ? rows_.end() : i->second;
  }

  const_iterator find(std::string_view key) const {
    auto i = index_.find(key);
    return i == index_.end() ? rows_.cend() : const_iterator{i->second};
  }

  /// The row of `key`, created (with a default value) if absent; second:
  /// whether it was created.
  std::pair<iterator, bool> try_emplace(const std::string& key) {
    if (auto i = index_.find(key); i != index_.end())
      return {i->second, false};
    auto r = rows_.try_emplace(key).first;
    index_.emplace(std::string_view{r->first}, r);
    return {r, true};
  }

  Value& operator[](const std::string& key) { return try_emplace(key).first->second; }

  iterator erase(iterator r) {
    index_.erase(std::string_view{r->first});
    return rows_.erase(r);
  }

  void clear() {
    index_.clear();
    rows_.clear();
  }

  // -- key order: the map ---------------------------------------------------

  iterator begin() { return rows_.begin(); }
  iterator end() { return rows_.end(); }
  const_iterator begin() const { return rows_.begin(); }
  const_iterator end() const { return rows_.end(); }
  iterator lower_bound(const std::string& key) { return rows_.lower_bound(key); }
  iterator upper_bound(const std::string& key) { return rows_.upper_bound(key); }
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }

  /// Whether the index lists exactly the map's rows (tests).
  bool consistent() const {
    if (index_.size() != rows_.size())
      return false;
    for (auto r = rows_.begin(); r != rows_.end(); ++r) {
      auto i = index_.find(r->first);
      if (i == index_.end() || const_iterator{i->second} != r)
        return false;
    }
    return true;
  }

private:
  map_type rows_;
  std::unordered_map<std::string_view, iterator> index_;
};

} // namespace conclave::store
