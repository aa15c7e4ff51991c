// The CAF type-ID block of the store (type_id_offset::store) and the
// conversion of store errors to caf::error. Register it in every process that
// talks to a store actor: cfg.add_message_types<caf::id_block::conclave_store>().
#pragma once

#include "protocols/store/batch.hpp"
#include "protocols/store/errc.hpp"
#include "protocols/store/operation.hpp"
#include "protocols/store/types.hpp"
#include "protocols/type_id_offsets.hpp"

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/type_id.hpp>

#include <optional>
#include <string>

CAF_BEGIN_TYPE_ID_BLOCK(conclave_store, conclave::type_id_offset::store)

CAF_ADD_TYPE_ID(conclave_store, (conclave::store::collection_kind))
CAF_ADD_TYPE_ID(conclave_store, (conclave::store::op_request))
CAF_ADD_TYPE_ID(conclave_store, (conclave::store::op_result))
CAF_ADD_TYPE_ID(conclave_store, (conclave::store::txn_id))
CAF_ADD_TYPE_ID(conclave_store, (conclave::store::op_batch))
CAF_ADD_TYPE_ID(conclave_store, (conclave::store::batch_result))

CAF_ADD_ATOM(conclave_store, conclave::store_atoms, begin_atom, "st_begin")
CAF_ADD_ATOM(conclave_store, conclave::store_atoms, commit_atom, "st_commit")
CAF_ADD_ATOM(conclave_store, conclave::store_atoms, abort_atom, "st_abort")
CAF_ADD_ATOM(conclave_store, conclave::store_atoms, open_atom, "st_open")
CAF_ADD_ATOM(conclave_store, conclave::store_atoms, done_atom, "st_done")
CAF_ADD_ATOM(conclave_store, conclave::store_atoms, checkpoint_atom, "st_ckpt")

CAF_END_TYPE_ID_BLOCK(conclave_store)

namespace conclave::store {

/// The category atom of store errors inside caf::error.
constexpr caf::atom_value error_category_atom = caf::atom("cncl_store");

/// A store error as caf::error (code = errc value, context = its name). Found
/// by ADL, so `caf::error e = errc::lock_timeout;` works.
inline caf::error make_error(errc e) {
  return caf::error{static_cast<uint8_t>(e), error_category_atom,
                    caf::make_message(std::string{to_string(e)})};
}

/// From std::error_code (what result<T> carries) to caf::error.
inline caf::error to_caf_error(const std::error_code& ec) {
  if (ec.category() == store_category())
    return make_error(static_cast<errc>(ec.value()));
  return make_error(errc::io_failure);
}

/// The store error inside a caf::error, if it is one.
inline std::optional<errc> to_errc(const caf::error& e) {
  if (!e || e.category() != error_category_atom)
    return std::nullopt;
  return static_cast<errc>(e.code());
}

} // namespace conclave::store
