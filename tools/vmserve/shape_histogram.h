// The traffic shapes a server saw: per model, how many requests came with each set of
// input shapes. vmserve keeps one per model (exposed in /metrics and written to a file on
// shutdown, `--shapes-out`); `vmtune --sizes-from` and `vmc --specialize-from` read that
// file to tune and specialize the sizes that traffic actually has.
//
// The file is JSON:
//   {"format": "dynvm-shapes/1",
//    "models": {"ppocrv4_rec": {"requests": 20, "other": 0,
//                               "shapes": [{"inputs": {"x": [1, 3, 48, 320]}, "count": 17},
//                                          ...]}}}
// "shapes" is sorted by count, most frequent first; "other" counts the requests that
// arrived with a new shape after the table was full (a bound, so that hostile traffic
// cannot grow it without limit).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vm/tensor.h"

namespace dynvm::serve {

// One request's input shapes, in signature order.
using InputShapes = std::vector<std::pair<std::string, vm::Shape>>;

struct ShapeCount {
  InputShapes inputs;
  uint64_t count = 0;
};

class ShapeHistogram {
 public:
  explicit ShapeHistogram(size_t max_shapes = 1024) : max_shapes_(max_shapes) {}
  void record(const InputShapes& shapes);   // thread-safe
  std::vector<ShapeCount> entries() const;  // most frequent first
  uint64_t other() const;

 private:
  size_t max_shapes_;
  mutable std::mutex mu_;
  std::map<InputShapes, uint64_t> counts_;
  uint64_t other_ = 0;
};

// "x=1x3x48x320" (inputs joined by ' ').
std::string shapes_str(const InputShapes& shapes);

struct ModelShapes {
  std::string model;
  std::vector<ShapeCount> shapes;
  uint64_t other = 0;
};

std::string shapes_file_json(const std::vector<ModelShapes>& models);
// Throws UserError naming the file and what is wrong with it.
std::vector<ModelShapes> read_shapes_file(const std::string& path);

// The traffic of one model, for `--sizes-from FILE[:MODEL]` and `--specialize-from`:
// MODEL's entry when named, else the entry whose shapes name exactly `input_names` (the
// one with the most requests when several do). Throws UserError when none fits.
ModelShapes traffic_for(const std::string& spec, const std::vector<std::string>& input_names);

}  // namespace dynvm::serve
