// The tests' names for conclave::ask and conclave::reply (actors/ask/ask.hpp),
// kept so that tests written against conclave::testing keep compiling.
#pragma once

#include "actors/ask/ask.hpp"

namespace conclave::testing {

using conclave::ask;
using conclave::reply;

} // namespace conclave::testing
