// What the cost model that ships with dynvm is trained on (scripts/make-tuning-db.sh): the
// features and measured score of every (candidate, size) vmtune measured or resumed, written
// by `vmtune --rows FILE` and fitted by `vmtune --fit-model`. One line per row, tab separated:
//
//   <task>\t<score>\t<f0>,<f1>,...,<f69>
//
// The task (workload key and size) is the row's ranking group: the model learns which
// candidate of one task is faster, never compares tasks. The score is 1e9 / ns (higher is
// better). Rows depend on features.h: a file written by another feature version is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynvm::tune {

struct TrainingRows {
  std::vector<std::vector<float>> features;
  std::vector<double> score;
  std::vector<int64_t> group;  // tasks numbered in order of first appearance
  size_t tasks = 0;
};

// Appends one row (UserError when the file cannot be written).
void append_training_row(const std::string& path, const std::string& task, double score,
                         const std::vector<float>& features);

// Every row of the files, tasks matched by name across files; UserError (naming file and
// line) for a line that is not a row of kNumFeatures features.
TrainingRows read_training_rows(const std::vector<std::string>& paths);

}  // namespace dynvm::tune
