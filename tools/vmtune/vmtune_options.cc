#include "tools/vmtune/vmtune_options.h"

#include "tools/cli_args.h"
#include "vm/error.h"

namespace dynvm::vmtune {

using tools::parse_number;

std::string usage_text() {
  return R"(usage: vmtune MODEL.onnx [-o RECORDS.jsonl] [options] [vmc options]

Tunes the schedules of a model's kernels on this machine: runs the model at a few input
sizes to find its kernels, the sizes they run at and where the time goes, then measures
schedule candidates for each kernel, chosen by an XGBoost cost model trained on the
measurements so far. Records are appended to RECORDS.jsonl as they are measured, so an
interrupted run resumes where it stopped; `vmc MODEL.onnx --tuning-log RECORDS.jsonl`
applies the best of them.

options:
  -o, --output FILE     tuning records (default: MODEL.tune.jsonl)
  --sizes SPEC          input sizes to run the model at, e.g. 'x=1x3x48x{100,320,960}'
                        (inputs separated by ';', each {..} group multiplies; repeatable);
                        default: three sizes sampled from each symbolic dim's range
  --sizes-from FILE[:MODEL]
                        the input sizes of served traffic, weighted by their request
                        counts: the shapes file vmserve writes (the 8 most frequent;
                        MODEL picks the served model, else the one with these inputs)
  --input NAME=FILE.npy this value for input NAME in every run (e.g. a sample rate)
  --trials N            candidates measured per kernel (default 64)
  --batch N             candidates per compilation and measuring process (default 8)
  --search model|random the search: XGBoost-guided (default) or random, to compare
  --threads N           threads the kernels run with while measured (default: all cores)
  --max-sizes N         sizes each kernel is measured at, where it spends most (default 4)
  --min-share F         skip kernels under this share of the model's kernel time
                        (default 0.005)
  --max-kernels N       tune at most the N kernels with the most time (default: all)
  --timeout S           a candidate that runs longer than this at one size fails (default 10)
  --seed N              the search's random seed (default 1)
  --rows FILE           append every measurement's features and score to FILE, the
                        training rows of a cost model (scripts/make-tuning-db.sh)
  --search-study        instead of tuning, compare the two searches: measure every
                        configuration of each kernel (up to --study-max-space of them),
                        then replay model-guided and random search against those costs
                        (--seeds each, --trials long) and print, per kernel, the trials
                        each needed to come within 5% of the best and the best so far
                        after 1, 2, 4, ... trials (the measurements go to the records)
  --seeds N             replays per search in --search-study (default 20)
  --study-max-space N   kernels with more configurations are left out (default 256)
  -q, --quiet           no progress display
  -h, --help            this text
vmc options (how the model is compiled, as in vmc --help): --dim, --static, --specialize,
  --no-fuse, --no-plan-memory

vmtune --fit-model OUT.ubj ROWS...
  trains a cost model on training rows (--rows) of one or more runs and writes it to
  OUT.ubj, for vmc --cost-model or to ship with dynvm (kernels/tune/db)
)";
}

Options parse_options(int argc, const char* const* argv) {
  Options o;
  o.tune.measure.threads = 0;
  std::vector<const char*> rest{argc > 0 ? argv[0] : "vmtune"};
  auto value = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--measure-worker") {
      if (argc - i - 1 != 2) throw UsageError("--measure-worker takes REQUEST LIBRARY");
      o.worker_args = {argv[i + 1], argv[i + 2]};
      return o;
    } else if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (a == "--fit-model") {
      if (argc - i - 1 < 2) throw UsageError("--fit-model takes OUT.ubj ROWS...");
      o.fit_output = argv[i + 1];
      o.fit_rows.assign(argv + i + 2, argv + argc);
      return o;
    } else if (a == "--rows") {
      o.tune.rows_path = value(i, a);
    } else if (a == "-q" || a == "--quiet") {
      o.quiet = true;
    } else if (a == "-o" || a == "--output") {
      o.output = value(i, a);
    } else if (a == "--sizes") {
      o.sizes.push_back(value(i, a));
    } else if (a == "--sizes-from") {
      o.sizes_from = value(i, a);
    } else if (a == "--input") {
      auto [name, file] = tools::parse_input_file(value(i, a));
      o.inputs[name] = file;
    } else if (a == "--trials") {
      o.tune.trials = parse_number<int>(value(i, a), a, 1, 1000000);
    } else if (a == "--batch") {
      o.tune.batch = parse_number<int>(value(i, a), a, 1, 1024);
    } else if (a == "--search") {
      const std::string s = value(i, a);
      if (s == "model") {
        o.tune.search = tune::SearchKind::kModel;
      } else if (s == "random") {
        o.tune.search = tune::SearchKind::kRandom;
      } else {
        throw UsageError("--search: '" + s + "' is not model or random");
      }
    } else if (a == "--threads") {
      o.tune.measure.threads = parse_number<int>(value(i, a), a, 1, 1024);
    } else if (a == "--max-sizes") {
      o.max_sizes = parse_number<int>(value(i, a), a, 1, 64);
    } else if (a == "--min-share") {
      o.min_share = parse_number<double>(value(i, a), a, 0.0, 1.0);
    } else if (a == "--max-kernels") {
      o.max_workloads = parse_number<int>(value(i, a), a, 1, 1000000);
    } else if (a == "--timeout") {
      o.tune.measure.timeout_s = parse_number<double>(value(i, a), a, 0.1, 3600.0);
    } else if (a == "--search-study") {
      o.search_study = true;
    } else if (a == "--seeds") {
      o.study_seeds = parse_number<int>(value(i, a), a, 1, 10000);
    } else if (a == "--study-max-space") {
      o.study_max_space = parse_number<uint64_t>(value(i, a), a, 1, 1000000);
    } else if (a == "--seed") {
      o.tune.seed = parse_number<uint64_t>(value(i, a), a, 0, UINT64_MAX);
    } else {
      rest.push_back(argv[i]);  // vmc's: the model, --dim, --static, ...
    }
  }
  o.compile = vmc::parse_options(static_cast<int>(rest.size()), rest.data());
  if (o.output.empty()) {
    std::string base = o.compile.model;
    const size_t dot = base.rfind('.'), slash = base.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) base.resize(dot);
    o.output = base + ".tune.jsonl";
  }
  return o;
}

}  // namespace dynvm::vmtune
