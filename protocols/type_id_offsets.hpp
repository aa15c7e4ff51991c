// Fixed, non-overlapping first type IDs for conclave's CAF type-ID blocks.
// Each module declares its message types in one block starting at its offset;
// a block holds at most 100 entries. Every process registers every block it uses
// (cfg.add_message_types<caf::id_block::NAME>()), in the same order, because the
// IDs and names are part of the wire format.
#pragma once

#include <caf/type_id.hpp>

namespace conclave::type_id_offset {

constexpr caf::type_id_t election = caf::first_custom_type_id;          // 200
constexpr caf::type_id_t store = caf::first_custom_type_id + 100;       // 300
constexpr caf::type_id_t node = caf::first_custom_type_id + 200;        // 400
constexpr caf::type_id_t workflow = caf::first_custom_type_id + 300;    // 500
constexpr caf::type_id_t replication = caf::first_custom_type_id + 400; // 600

} // namespace conclave::type_id_offset
