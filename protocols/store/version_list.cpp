#include "protocols/store/version_list.hpp"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

namespace conclave::store {

// -- value bytes: one heap block, varint length then the bytes --------------------

char* version_list::pack(std::string_view value) {
  if (value.empty())
    return nullptr;
  char len[10];
  size_t n = 0;
  for (auto x = static_cast<uint64_t>(value.size());; x >>= 7) {
    if (x < 0x80) {
      len[n++] = static_cast<char>(x);
      break;
    }
    len[n++] = static_cast<char>((x & 0x7F) | 0x80);
  }
  auto* p = static_cast<char*>(std::malloc(n + value.size()));
  if (!p)
    throw std::bad_alloc{};
  std::memcpy(p, len, n);
  std::memcpy(p + n, value.data(), value.size());
  return p;
}

std::string_view version_list::unpack(const char* bytes) {
  if (!bytes)
    return {};
  uint64_t size = 0;
  size_t n = 0;
  for (int shift = 0;; shift += 7) {
    auto b = static_cast<unsigned char>(bytes[n++]);
    size |= uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0)
      break;
  }
  return {bytes + n, static_cast<size_t>(size)};
}

char* version_list::copy_bytes(const char* bytes) {
  return bytes ? pack(unpack(bytes)) : nullptr;
}

version_list::version version_list::view_of(uint64_t at_flags, const char* bytes) {
  return version{lsn{at_flags & lsn_mask}, (at_flags & newest_present) != 0,
                 unpack(bytes)};
}

// -- life cycle ---------------------------------------------------------------------

version_list::version_list(const version_list& other)
    : newest_(other.newest_), bytes_(copy_bytes(other.bytes_)) {
  if (other.older_) {
    older_ = new older_list(*other.older_);
    for (auto& o : *older_)
      o.bytes = copy_bytes(o.bytes);
  }
}

version_list::version_list(version_list&& other) noexcept
    : newest_(other.newest_), bytes_(other.bytes_), older_(other.older_) {
  other.newest_ = 0;
  other.bytes_ = nullptr;
  other.older_ = nullptr;
}

version_list& version_list::operator=(const version_list& other) {
  if (this != &other) {
    version_list copy{other};
    *this = std::move(copy);
  }
  return *this;
}

version_list& version_list::operator=(version_list&& other) noexcept {
  if (this != &other) {
    clear();
    newest_ = other.newest_;
    bytes_ = other.bytes_;
    older_ = other.older_;
    other.newest_ = 0;
    other.bytes_ = nullptr;
    other.older_ = nullptr;
  }
  return *this;
}

version_list::~version_list() {
  clear();
}

void version_list::clear() {
  std::free(bytes_);
  bytes_ = nullptr;
  if (older_) {
    for (auto& o : *older_)
      std::free(o.bytes);
    delete older_;
    older_ = nullptr;
  }
  newest_ = 0;
}

// -- reading ------------------------------------------------------------------------

size_t version_list::size() const {
  if (empty())
    return 0;
  return 1 + (older_ ? older_->size() : 0);
}

version_list::version version_list::operator[](size_t i) const {
  if (older_ && i < older_->size())
    return view_of((*older_)[i].at_flags, (*older_)[i].bytes);
  return back();
}

version_list::version version_list::back() const {
  assert(!empty());
  return view_of(newest_, bytes_);
}

std::optional<version_list::version> version_list::at_snapshot(lsn snapshot) const {
  if (empty())
    return std::nullopt;
  if ((newest_ & lsn_mask) <= snapshot.value)
    return back();
  if (older_)
    for (auto i = older_->rbegin(); i != older_->rend(); ++i)
      if ((i->at_flags & lsn_mask) <= snapshot.value)
        return view_of(i->at_flags, i->bytes);
  return std::nullopt;
}

// -- changing -----------------------------------------------------------------------

void version_list::push_back(lsn at, bool present, std::string_view value) {
  assert(at.value <= lsn_mask);
  assert(empty() || at.value > (newest_ & lsn_mask));
  auto* bytes = present ? pack(value) : nullptr;
  if (!empty()) {
    try {
      if (!older_)
        older_ = new older_list;
      older_->push_back(older_version{newest_, bytes_});
    } catch (...) {
      std::free(bytes);
      throw;
    }
  }
  newest_ = has_newest | (present ? newest_present : 0) | at.value;
  bytes_ = bytes;
}

void version_list::drop_oldest(size_t n) {
  if (n == 0 || !older_)
    return;
  assert(n < size());
  for (size_t i = 0; i < n; ++i)
    std::free((*older_)[i].bytes);
  older_->erase(older_->begin(), older_->begin() + static_cast<std::ptrdiff_t>(n));
  if (older_->empty()) {
    delete older_;
    older_ = nullptr;
  }
}

} // namespace conclave::store
