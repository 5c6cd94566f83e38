#include "tools/vmrun/cli_options.h"

#include <charconv>
#include <limits>

namespace dynvm::vmrun {
namespace {

template <typename... Args>
[[noreturn]] void usage_error(Args&&... args) {
  throw UsageError(str_cat(std::forward<Args>(args)..., " (see vmrun --help)"));
}

template <typename Int>
Int parse_int(std::string_view option, std::string_view text, Int min) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min) {
    usage_error("option ", option, " needs an integer >= ", min, ", got '", text, "'");
  }
  return value;
}

}  // namespace

std::string usage_text() {
  return R"(usage: vmrun model.vmexe [options]

Runs a dynvm executable on inputs from NumPy files or random values, and prints or saves
its outputs.

inputs:
  --input, -i NAME=FILE.npy bind input NAME to the contents of a .npy file
  --input NAME=SHAPE:DTYPE  bind input NAME to random values of that shape and dtype,
                            e.g. 1x128:i64, 4x3x48x320:f32, scalar:f32 (or :f32)
  --input SOURCE            without NAME=: the next unbound input, in signature order
  --input NAME=SOURCE ...   a sequence input: repeat it, one SOURCE per element in order
                            (NAME=empty: no elements); an optional input: NAME=none has
                            no value
  --seed N                  seed of the random values (default 0); floats are uniform
                            in [-1, 1), integers in [0, 10), bools true or false
outputs:
  --output-dir, -o DIR      write each output to DIR/NAME.npy, creating DIR; without
                            it, print each output's dtype, shape, first values and,
                            for floats, min/max/mean; a sequence's (or optional's)
                            elements are the outputs NAME.0, NAME.1, ...
execution:
  --repeat N                after one warm-up run, time N runs and print the median
                            and p90 latency
  --threads N               run on the TBB executor with N threads (default: all
                            hardware threads)
  --sync                    run on the calling thread (SyncExecutor), deterministically
  --profile                 time every kernel call and print, after the latency line, a
                            table of kernels by total time (calls, total ms, mean us,
                            % of run) and the time spent outside kernels; it covers
                            the --repeat runs (not the warm-up), else the single run
inspection:
  --info                    print the signature, target, producer, format version and
                            the number of functions, kernels and constants
  --disasm                  print the bytecode
                            (with --info or --disasm, the model runs only when inputs,
                            --output-dir, --repeat or --profile are given too)
  --help, -h                print this text
  --version                 print vmrun's version

Options take their value as `--opt VALUE` or `--opt=VALUE`. Exit status: 0 on success,
1 when the model, an input or a file is wrong, 2 when the command line is.

To serve models over HTTP (the KServe v2 / Open Inference protocol), with requests of
any sizes running concurrently: vmserve MODEL.vmexe --port 8000 (see vmserve --help).
)";
}

std::string_view version_text() { return "vmrun (dynvm) " DYNVM_VERSION; }

Options parse_options(int argc, const char* const* argv) {
  Options opts;
  bool model_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (model_given) {
        usage_error("unexpected argument '", arg, "' (inputs are given with --input)");
      }
      opts.model = arg;
      model_given = true;
      continue;
    }
    std::string_view name = arg;
    std::string_view inline_value;
    bool has_inline_value = false;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline_value = true;
    }
    auto value = [&]() -> std::string_view {
      if (has_inline_value) {
        if (inline_value.empty()) usage_error("option ", name, " needs a value");
        return inline_value;
      }
      // A following option is a forgotten value, not a value that starts with "--".
      if (i + 1 >= argc || std::string_view(argv[i + 1]).starts_with("--")) {
        usage_error("option ", name, " needs a value");
      }
      return argv[++i];
    };
    auto flag = [&](bool& field) {
      if (has_inline_value) usage_error("option ", name, " takes no value");
      field = true;
    };
    if (name == "--input" || name == "-i") {
      std::string_view v = value();
      InputArg input;
      if (size_t eq = v.find('='); eq != std::string_view::npos) {
        input.name = v.substr(0, eq);
        input.source = v.substr(eq + 1);
        if (input.name.empty()) usage_error("--input '", v, "' has an empty input name");
        if (input.source.empty()) usage_error("--input '", v, "' gives no file or SHAPE:DTYPE");
      } else {
        input.source = v;
      }
      opts.inputs.push_back(std::move(input));
    } else if (name == "--output-dir" || name == "-o") {
      opts.output_dir = value();
    } else if (name == "--repeat") {
      opts.repeat = parse_int<int64_t>(name, value(), 1);
    } else if (name == "--threads") {
      opts.threads = parse_int<int>(name, value(), 1);
      opts.threads_given = true;
    } else if (name == "--seed") {
      opts.seed = parse_int<uint64_t>(name, value(), 0);
    } else if (name == "--sync") {
      flag(opts.sync);
    } else if (name == "--profile") {
      flag(opts.profile);
    } else if (name == "--info") {
      flag(opts.info);
    } else if (name == "--disasm") {
      flag(opts.disasm);
    } else if (name == "--help" || name == "-h") {
      flag(opts.help);
    } else if (name == "--version") {
      flag(opts.version);
    } else {
      usage_error("unknown option '", name, "'");
    }
  }
  if (opts.help || opts.version) return opts;
  if (!model_given) usage_error("no model given: vmrun model.vmexe [options]");
  if (opts.sync && opts.threads_given) {
    usage_error("--sync runs on the calling thread; it cannot be combined with --threads");
  }
  return opts;
}

}  // namespace dynvm::vmrun
