#include "tools/vmbench/vmbench_options.h"

#include <sstream>

#include "tools/cli_args.h"
#include "vm/error.h"

namespace dynvm::vmbench {

using tools::parse_number;

std::string usage_text() {
  return R"(usage: vmbench MODEL.onnx [--sizes SPEC]... [options] [vmc options]

Dynamic versus static compilation of your model: compiles it once with its symbolic dims
(what vmc does) and once statically for each size (vmc --static), runs both at every size
in interleaved rounds (each keeps its best round's median), and prints per size the
latency of each, their ratio and the runs' peak memory, per build the compile time and
file size, and what one dynamic build saves over one static build per size.

options:
  --sizes SPEC          sizes to measure, e.g. 'x=1x3x48x{100,320,960}' (inputs separated
                        by ';', each {..} group multiplies; repeatable); default: three
                        sizes sampled from each symbolic dim's range
  --sizes-from FILE[:MODEL]
                        the sizes of served traffic, from the shapes file vmserve writes
                        (the 8 most frequent); totals are weighted by request counts
  --input NAME=FILE.npy this value for input NAME at every size (e.g. a sample rate);
                        other inputs get seeded random values
  --threads N[,M...]    thread counts, one table each (default 1)
  --rounds N            interleaved rounds (default 3)
  --repeat N            timed runs per engine, size and round (default 20)
  --ort                 also run ONNX Runtime (onnxruntime-node through the peer's
                        ort_run.mjs) on the same inputs in the same rounds
  --ort-run PATH        where ort_run.mjs is (default: $DYNVM_ORT_RUN, else
                        ../shared/peer/ort_run.mjs from here or from the repository)
  --json FILE           everything measured, as JSON
  --svg FILE            a plot of latency against size and of compile times, as SVG
  --seed N              seed of the random inputs (default 1)
  -q, --quiet           no progress display
  -h, --help            this text
vmc options (how the model is compiled, as in vmc --help): --dim, --tuning-log,
  --cost-model, --no-cost-model, --specialize, --no-fuse, --no-plan-memory
)";
}

Options parse_options(int argc, const char* const* argv) {
  Options o;
  std::vector<const char*> rest{argc > 0 ? argv[0] : "vmbench"};
  auto value = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (a == "-q" || a == "--quiet") {
      o.quiet = true;
    } else if (a == "--sizes") {
      o.sizes.push_back(value(i, a));
    } else if (a == "--sizes-from") {
      o.sizes_from = value(i, a);
    } else if (a == "--input") {
      auto [name, file] = tools::parse_input_file(value(i, a));
      o.inputs[name] = file;
    } else if (a == "--threads") {
      o.threads.clear();
      std::stringstream ss(value(i, a));
      for (std::string part; std::getline(ss, part, ',');) {
        o.threads.push_back(parse_number<int>(part, a, 1, 1024));
      }
      if (o.threads.empty()) throw UsageError("--threads needs at least one count");
    } else if (a == "--rounds") {
      o.rounds = parse_number<int>(value(i, a), a, 1, 1000);
    } else if (a == "--repeat") {
      o.repeat = parse_number<int>(value(i, a), a, 1, 1000000);
    } else if (a == "--ort") {
      o.ort = true;
    } else if (a == "--ort-run") {
      o.ort = true;
      o.ort_run = value(i, a);
    } else if (a == "--json") {
      o.json = value(i, a);
    } else if (a == "--svg") {
      o.svg = value(i, a);
    } else if (a == "--seed") {
      o.seed = parse_number<uint64_t>(value(i, a), a, 0, UINT64_MAX);
    } else if (a == "-o" || a == "--output" || a == "--static") {
      throw UsageError(a +
                       " is not a vmbench option: vmbench compiles the dynamic and the "
                       "static builds itself and writes no executable");
    } else {
      rest.push_back(argv[i]);  // vmc's: the model, --dim, --tuning-log, ...
    }
  }
  o.compile = vmc::parse_options(static_cast<int>(rest.size()), rest.data());
  o.compile.quiet = true;  // vmbench shows its own progress
  return o;
}

}  // namespace dynvm::vmbench
