// The TIR lowering pipeline: from the PrimFunc that TE lowering produces to the LoweredFunc
// that code generation consumes. lower.cc is the list of passes, in order.
#pragma once

#include <iosfwd>
#include <string>

#include "kernels/tir/stmt.h"

namespace dynvm::tir {

struct LowerOptions {
  // Print the IR after this pass ("all": after every pass; "input": before the first).
  std::string dump_after;
  std::ostream* dump_stream = nullptr;  // nullptr: std::cerr; also receives timings
  bool time_passes = false;             // one line per pass: name, time, changed or not
  // Run the verifier after every pass, not only at the end (always on in debug builds).
  bool verify_each = false;
  // specialize_extents: the most copies of one statement it may make so that the remainder
  // loops of splits get constant extents (0: none; 1: only where a single value is possible).
  int64_t max_specialized_copies = 8;
};

LoweredFunc lower(PrimFunc f, const LowerOptions& opts = {});

}  // namespace dynvm::tir
