// Tuning records: one JSON object per line, appended as each candidate is measured, so an
// interrupted vmtune resumes where it stopped and vmc --tuning-log picks the best one per
// workload. A record:
//
//   {"version":1,"workload":"Conv|...|f32[s0,3,48,s1]|...","kernel":"k3_Conv",
//    "target":"x86_64-pc-linux-gnu cpu=... vector_bits=512","knobs":{"oc_block":8,...},
//    "sizes":[{"args":[[1,3,48,320],[16,3,3,3],[1,16,24,160]],"weight":0.7,"ns":81234.5}],
//    "cost_ns":79000.1,"error":""}
//
// `sizes` are the argument shapes the candidate ran at (inputs then outputs) with their
// weight in the model's time and the median time there; cost_ns is the weighted mean of
// those times, what candidates of one workload are ranked by. A candidate that failed to
// build, crashed, hung or computed a different result has an `error` and no cost.
//
// A record with a `range` ({"arg":0,"axis":3,"lo":0,"hi":80}) is not a measurement but a
// choice vmtune made after a workload's search (ranges.h): these knobs for the sizes whose
// argument dim lies in the range. They come in groups that cover the dim.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ops/op.h"
#include "kernels/tune/ranges.h"
#include "vm/profile.h"

namespace dynvm::tune {

inline constexpr int kRecordVersion = 1;

struct SizeCost {
  vm::ArgShapes args;
  double weight = 1;
  double ns = 0;  // median time of one call
};

struct TuningRecord {
  int version = kRecordVersion;
  std::string workload;  // compiler KernelRequest::workload
  std::string kernel;    // the kernel's name where it was tuned, for people reading logs
  std::string target;    // codegen::Target::description() of the machine that measured it
  ops::KnobValues knobs;
  std::vector<SizeCost> sizes;
  double cost_ns = 0;
  std::string error;               // empty when measured and checked
  std::optional<SizeRange> range;  // set on a sub-range choice
  bool ok() const { return error.empty(); }
};

std::string to_json_line(const TuningRecord& r);  // no trailing newline
// UserError (one line) when `line` is not a record of a version this dynvm reads.
TuningRecord parse_record(const std::string& line);

// Every record of the file; a missing file has none. A last line cut short (a run killed
// while writing) is skipped; any other line that is not a record is a UserError naming
// file and line.
std::vector<TuningRecord> read_records(const std::string& path);
// Appends one line and flushes it to the file.
void append_record(const std::string& path, const TuningRecord& r);

// The measured record of least cost for each workload, among those made for `target`
// (all targets when empty). Sub-range choices are not measurements: they are left out.
std::map<std::string, TuningRecord> best_records(const std::vector<TuningRecord>& records,
                                                 const std::string& target = "");
// Each workload's latest group of sub-range choices (consecutive range records) for
// `target`.
std::map<std::string, std::vector<TuningRecord>> range_records(
    const std::vector<TuningRecord>& records, const std::string& target = "");

}  // namespace dynvm::tune
