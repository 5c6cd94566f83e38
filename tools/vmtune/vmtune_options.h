// vmtune's command line (vmtune.cc runs it). The model and the flags that say how to
// compile it (--dim, --static, --no-fuse, ...) are vmc's, parsed by vmc's parser.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/tune/tuner.h"
#include "tools/vmc/vmc_options.h"

namespace dynvm::vmtune {

struct Options {
  vmc::Options compile;            // model, --dim, --static, ...
  std::string output;              // the records file (-o); default MODEL.tune.jsonl
  std::vector<std::string> sizes;  // --sizes specs (size_sets.h)
  std::string sizes_from;          // --sizes-from: vmserve's shapes file (FILE[:MODEL])
  // --input NAME=FILE.npy: this value for input NAME in every run (a sample rate, a mask).
  std::map<std::string, std::string> inputs;
  tune::TuneOptions tune;
  int max_sizes = 4;         // sizes per workload, the ones with the most time
  double min_share = 0.005;  // workloads under this share of kernel time are skipped
  int max_workloads = 0;     // 0: no limit
  int profile_runs = 3;
  // --search-study: model-guided against random search, replayed on measured tables
  // (search_study.h) instead of tuning.
  bool search_study = false;
  int study_seeds = 20;
  uint64_t study_max_space = 256;
  bool help = false;
  bool quiet = false;
  // --fit-model OUT.ubj ROWS...: train a cost model on training rows (the shipped one:
  // scripts/make-tuning-db.sh) instead of tuning.
  std::string fit_output;
  std::vector<std::string> fit_rows;
  // Internal: vmtune --measure-worker REQUEST LIBRARY (measure_worker.h).
  std::vector<std::string> worker_args;
};

Options parse_options(int argc, const char* const* argv);  // UsageError when malformed
std::string usage_text();

}  // namespace dynvm::vmtune
