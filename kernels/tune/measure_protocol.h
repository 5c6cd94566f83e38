// What the tuner's parent process (measure.h) and its measuring child (measure_worker.h)
// say to each other. The parent writes a request file; the child prints one result line
// per job on stdout as soon as it has it, so that when a candidate crashes or hangs the
// parent knows which one it was and restarts the child without it.
//
//   request (text, whitespace-separated):
//     dynvm-measure 1
//     threads T  min_time_ms M  min_repeat A  max_repeat B
//     symbols N  <reference> <candidate 1> ... <candidate N-1>
//     args K  <dtype> <in|out> ...                       (K arguments, inputs first)
//     sizes S  then per size, per argument: <rank> <dims...>
//     jobs J   <symbol index> <size index> ...            (symbol 0 is never a job)
//   result lines:
//     ok <symbol> <size> <median ns>
//     error <symbol> <size> <one-line message>
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vm/dtype.h"
#include "vm/profile.h"

namespace dynvm::tune {

struct MeasureRequest {
  int threads = 1;
  double min_time_ms = 20;           // time each job at least this long ...
  int min_repeat = 3;                // ... and at least this many calls ...
  int max_repeat = 100;              // ... but no more than this many
  std::vector<std::string> symbols;  // [0]: the reference every candidate is checked against
  std::vector<vm::DType> arg_dtypes;
  size_t num_inputs = 0;
  std::vector<vm::ArgShapes> sizes;
  std::vector<std::pair<size_t, size_t>> jobs;  // (symbol, size)
};

struct MeasureResult {
  size_t symbol = 0;
  size_t size = 0;
  double ns = 0;
  std::string error;  // empty: measured and checked
};

std::string format_request(const MeasureRequest& r);
MeasureRequest parse_request(const std::string& text);  // UserError when malformed

std::string format_result(const MeasureResult& r);  // one line, no newline
// False for a line that is not a result (the child's other output).
bool parse_result(const std::string& line, MeasureResult* r);

}  // namespace dynvm::tune
