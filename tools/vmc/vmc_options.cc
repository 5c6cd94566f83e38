// vmc's command line (see vmc_options.h).
#include "tools/vmc/vmc_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace dynvm::vmc {

std::vector<std::string> step_names() {
  std::vector<std::string> names{"import"};
  for (const std::string& s : compiler::pipeline_step_names()) names.push_back(s);
  return names;
}

namespace {

std::string joined_step_names() {
  std::string out;
  for (const std::string& s : step_names()) out += s + ", ";
  return out + "all";
}

int64_t parse_int(const std::string& s, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw UsageError(what + ": '" + s + "' is not an integer");
  }
  return v;
}

// NAME=VALUE
std::pair<std::string, std::string> split_assignment(const std::string& arg,
                                                     const std::string& flag) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
    throw UsageError(flag + " expects NAME=VALUE, got '" + arg + "'");
  }
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

}  // namespace

std::string usage_text() {
  return R"(usage: vmc MODEL.onnx [-o OUT.vmexe] [options]

Compiles an ONNX model once, with its symbolic dims kept symbolic, into a .vmexe that
vmrun runs on any input size.

options:
  -o, --output FILE      where to write the executable (default: MODEL with .vmexe)
  --dim NAME=LO..HI      the range of a symbolic dim (or NAME=V for one size); the
                         model's dim names, or <input>_<axis> for unnamed dims
  --dim NAME=V1,V2,...   dim NAME takes exactly these values (e.g. input_1=256,512): the
                         executable holds one version of the model per value, each
                         compiled with NAME fixed (so shape guards are decided), chosen
                         at run time; other values are a run-time error
  --dim NAME=OTHER       dim NAME is the same size as dim OTHER (one symbol)
  --static NAME=SHAPE    compile input NAME for exactly SHAPE (e.g. x=1x3x48x320): a
                         fully static executable, for comparison with the dynamic one
  --specialize NAME=V    also generate kernel variants for dim NAME == V (repeatable)
  --specialize-from FILE[:MODEL]
                         also generate variants for the input sizes that carry at least
                         5% of the requests in a shapes file vmserve wrote (at most 4;
                         MODEL picks the served model, else the one with these inputs)
  --tuning-log FILE      apply the best tuning record (vmtune) of each kernel measured
                         on this machine's kind of CPU; kernels without one take the
                         schedule the cost model ranks first
  --cost-model FILE      rank schedules with this cost model (vmtune --fit-model)
                         instead of the one that ships with dynvm
  --no-cost-model        kernels without a tuning record keep their template's default
                         schedule (to measure what the cost model's ranking gains)
  --no-fuse              compile every operator as its own kernel (to measure fusion)
  --no-block-channels    keep depthwise-separable convs in NCHW (to measure the
                         channel-blocked layout)
  --no-winograd          run blocked 3x3 convs directly, not by Winograd's F(4x4, 3x3)
                         (to measure it)
  --no-plan-memory       allocate every kernel output on its own (to measure planning)
  --dump-ir after:STEP   print the IR after a step (the graph, the placement or the
                         bytecode): )" +
         joined_step_names() + R"(
  --dump-tir NAME        print the lowered TIR of every kernel variant whose name
                         contains NAME ("" for all), as kernels are generated
  --time-passes          print how long each step took and what it changed
  --verify-each          check the IR after every step (always on in Debug builds)
  -q, --quiet            no progress display
  -h, --help             this text
  --version              the version
)";
}

Options parse_options(int argc, const char* const* argv) {
  Options o;
  auto value = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "-q" || a == "--quiet") {
      o.quiet = true;
    } else if (a == "-o" || a == "--output") {
      o.output = value(i, a);
    } else if (a == "--tuning-log") {
      o.tuning_log = value(i, a);
    } else if (a == "--no-fuse") {
      o.compile.fuse = false;
    } else if (a == "--no-block-channels") {
      o.compile.block_channels = false;
    } else if (a == "--no-winograd") {
      o.compile.winograd = false;
    } else if (a == "--cost-model") {
      o.cost_model = value(i, a);
    } else if (a == "--no-cost-model") {
      o.compile.lower.rank_schedules = false;
    } else if (a == "--no-plan-memory") {
      o.compile.lower.plan_memory = false;
    } else if (a == "--dump-tir") {
      o.dump_tir = value(i, a);
    } else if (a == "--time-passes") {
      o.compile.time_passes = true;
    } else if (a == "--verify-each") {
      o.compile.verify_each = true;
    } else if (a == "--dump-ir") {
      std::string v = value(i, a);
      if (v.rfind("after:", 0) != 0)
        throw UsageError("--dump-ir expects after:STEP, got '" + v + "'");
      o.compile.dump_after = v.substr(6);
      std::vector<std::string> names = step_names();
      bool known = o.compile.dump_after == "all" ||
                   std::find(names.begin(), names.end(), o.compile.dump_after) != names.end();
      if (!known) {
        throw UsageError("--dump-ir: unknown step '" + o.compile.dump_after +
                         "' (steps: " + joined_step_names() + ")");
      }
    } else if (a == "--dim") {
      auto [name, range] = split_assignment(value(i, a), "--dim");
      if (!range.empty() &&
          (std::isalpha(static_cast<unsigned char>(range[0])) || range[0] == '_')) {
        o.import.same_dims[name] = range;  // --dim A=B: the same dim
        continue;
      }
      if (range.find(',') != std::string::npos) {  // --dim A=V1,V2: versioned by value
        std::vector<int64_t> values;
        std::stringstream ss(range);
        std::string part;
        while (std::getline(ss, part, ',')) {
          int64_t v = parse_int(part, "--dim " + name);
          if (v < 0) throw UsageError("--dim " + name + ": negative size " + part);
          if (std::find(values.begin(), values.end(), v) != values.end())
            throw UsageError("--dim " + name + ": " + part + " is given twice");
          values.push_back(v);
        }
        if (range.back() == ',') throw UsageError("--dim " + name + ": empty value in " + range);
        o.import.dims.erase(name);
        o.compile.dim_versions[name] = values;
        continue;
      }
      frontends::onnx_import::DimRange r;
      size_t dots = range.find("..");
      if (dots == std::string::npos) {
        r.min = r.max = parse_int(range, "--dim " + name);
      } else {
        r.min = parse_int(range.substr(0, dots), "--dim " + name);
        r.max = parse_int(range.substr(dots + 2), "--dim " + name);
      }
      if (r.min < 0 || r.min > r.max)
        throw UsageError("--dim " + name + ": empty or negative range " + range);
      o.import.dims[name] = r;
      o.compile.dim_versions.erase(name);
    } else if (a == "--static") {
      auto [name, shape] = split_assignment(value(i, a), "--static");
      std::vector<int64_t> dims;
      std::stringstream ss(shape);
      std::string part;
      while (std::getline(ss, part, 'x')) {
        int64_t d = parse_int(part, "--static " + name);
        if (d < 0) throw UsageError("--static " + name + ": negative dim");
        dims.push_back(d);
      }
      o.compile.static_inputs[name] = dims;
    } else if (a == "--specialize-from") {
      o.specialize_from = value(i, a);
    } else if (a == "--specialize") {
      auto [name, v] = split_assignment(value(i, a), "--specialize");
      o.compile.lower.static_shapes.push_back({{name, parse_int(v, "--specialize " + name)}});
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a + " (see --help)");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      throw UsageError("more than one model given: " + o.model + " and " + a);
    }
  }
  if (o.help || o.version) return o;
  if (o.model.empty()) throw UsageError("no model given (see --help)");
  if (o.output.empty()) {
    std::string base = o.model;
    size_t dot = base.rfind('.');
    size_t slash = base.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) base.resize(dot);
    o.output = base + ".vmexe";
  }
  return o;
}

}  // namespace dynvm::vmc
