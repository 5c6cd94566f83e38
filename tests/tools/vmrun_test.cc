// Runs the real `vmrun` binary (VMRUN_PATH) on the models make_vmrun_fixtures wrote into
// VMRUN_FIXTURE_DIR and checks what a user sees: outputs written as .npy hold the right
// values, --info/--disasm/--repeat print what they promise, and every bad command line,
// input or file ends in exactly one stderr line starting with "vmrun: " and a non-zero
// exit (2 for the command line, 1 for the rest), never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "serializer/vmexe.h"
#include "tests/support/run_program.h"
#include "vm/float16.h"
#include "vm/npy.h"

namespace dynvm::vm {
namespace {

namespace fs = std::filesystem;

using Result = testing::ProgramResult;

// Every directory fresh_dir made, removed when the test program ends.
std::vector<std::string>& made_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

class RemoveMadeDirs : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const std::string& dir : made_dirs()) fs::remove_all(dir, ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveMadeDirs =
    ::testing::AddGlobalTestEnvironment(new RemoveMadeDirs);

// A fresh directory per call (named by pid, so parallel ctest processes never collide).
std::string fresh_dir(const std::string& tag) {
  static int counter = 0;
  fs::path dir = fs::path(::testing::TempDir()) / ("vmrun_test_" + std::to_string(::getpid()) +
                                                   "_" + tag + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  made_dirs().push_back(dir.string());
  return dir.string();
}

std::string model(const std::string& name) { return std::string(VMRUN_FIXTURE_DIR) + "/" + name; }

// Runs vmrun with `args`, stdout and stderr captured through files (no pipe to drain).
Result vmrun(const std::vector<std::string>& args) {
  std::string dir = fresh_dir("run");
  Result r = testing::run_program(VMRUN_PATH, args, dir);
  fs::remove_all(dir);
  return r;
}

std::string describe(const std::vector<std::string>& args, const Result& r) {
  std::string cmd = "vmrun";
  for (const auto& a : args) cmd += " " + a;
  return cmd + "\n  status " + std::to_string(r.status) + "\n  stdout: " + r.out +
         "\n  stderr: " + r.err;
}

// The contract for every failure: exit `status`, one stderr line "vmrun: ...<substring>...".
void expect_error(const std::vector<std::string>& args, int status, const std::string& substring) {
  Result r = vmrun(args);
  SCOPED_TRACE(describe(args, r));
  EXPECT_EQ(r.status, status);
  EXPECT_EQ(r.err.rfind("vmrun: ", 0), 0u);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_NE(r.err.find(substring), std::string::npos);
}

Result expect_success(const std::vector<std::string>& args) {
  Result r = vmrun(args);
  EXPECT_EQ(r.status, 0) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  return r;
}

Tensor iota_f32(Shape shape) {
  Tensor t = Tensor::empty(std::move(shape), DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = 0.5f * static_cast<float>(i) - 7;
  return t;
}

Tensor iota_i64(Shape shape) {
  Tensor t = Tensor::empty(std::move(shape), DType::kInt64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<int64_t>()[i] = 1000 * i - 3;
  return t;
}

std::string save(const Tensor& t, const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name + ".npy";
  write_npy(t, path);
  return path;
}

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0);
}

// ---- running models ----

TEST(Vmrun, IdentityWritesItsInputBackAsNpy) {
  std::string dir = fresh_dir("identity");
  Tensor x = iota_f32({2, 6, 4});
  std::string out_dir = dir + "/not/yet/there";
  Result r = expect_success(
      {model("identity.vmexe"), "--input", "x=" + save(x, dir, "x"), "--output-dir", out_dir});
  EXPECT_NE(r.out.find("wrote " + out_dir + "/y.npy"), std::string::npos) << r.out;
  expect_same(read_npy(out_dir + "/y.npy"), x);
}

TEST(Vmrun, PairWritesReshapedTensorPassThroughAndComputedInteger) {
  std::string dir = fresh_dir("pair");
  Tensor x = iota_f32({3, 4, 4});
  Tensor h = iota_i64({4});
  std::string xp = save(x, dir, "x");
  std::string hp = save(h, dir, "h");
  // By name, in either order; positionally in signature order; and mixed.
  for (const auto& inputs : std::vector<std::vector<std::string>>{
           {"--input", "x=" + xp, "--input", "h=" + hp},
           {"--input", "h=" + hp, "--input=x=" + xp},
           {"--input", xp, "--input", hp},
           {"--input", "h=" + hp, "-i", xp},
       }) {
    std::string out = fresh_dir("pair_out");
    std::vector<std::string> args = {model("pair.vmexe"), "--output-dir", out};
    args.insert(args.end(), inputs.begin(), inputs.end());
    expect_success(args);
    expect_same(read_npy(out + "/flat.npy"), x.reshape_view({12, 4}));
    expect_same(read_npy(out + "/h_out.npy"), h);
    Tensor rows = read_npy(out + "/rows.npy");
    ASSERT_EQ(rows.dtype(), DType::kInt64);
    EXPECT_EQ(rows.ndim(), 0);
    EXPECT_EQ(rows.data_as<int64_t>()[0], 12);
  }
}

TEST(Vmrun, SyncAndThreadedExecutorsGiveTheSameOutputs) {
  std::string dir = fresh_dir("executors");
  std::string xp = save(iota_f32({2, 8, 4}), dir, "x");
  std::string hp = save(iota_i64({8}), dir, "h");
  std::string first;
  for (const auto& mode :
       std::vector<std::vector<std::string>>{{"--sync"}, {"--threads", "1"}, {"--threads=3"}, {}}) {
    std::string out = fresh_dir("exec_out");
    std::vector<std::string> args = {model("pair.vmexe"), "--input",      "x=" + xp, "--input",
                                     "h=" + hp,           "--output-dir", out};
    args.insert(args.end(), mode.begin(), mode.end());
    expect_success(args);
    std::string bytes = testing::slurp_file(out + "/flat.npy") +
                        testing::slurp_file(out + "/h_out.npy") +
                        testing::slurp_file(out + "/rows.npy");
    if (first.empty()) first = bytes;
    EXPECT_EQ(bytes, first);
  }
}

TEST(Vmrun, RandomInputsAreSeededAndInTheirRanges) {
  auto run_dtypes = [](const std::string& seed) {
    std::string out = fresh_dir("random");
    expect_success({model("dtypes.vmexe"), "--input", "a=50:i64", "--input", "b=2x2:bool",
                    "--input", "c=64:f16", "--seed", seed, "--output-dir", out});
    return out;
  };
  std::string s7 = run_dtypes("7");
  std::string s7_again = run_dtypes("7");
  std::string s8 = run_dtypes("8");
  for (const char* name : {"a", "b", "c"}) {
    std::string file = std::string("/") + name + ".npy";
    EXPECT_EQ(testing::slurp_file(s7 + file), testing::slurp_file(s7_again + file)) << name;
  }
  EXPECT_NE(testing::slurp_file(s7 + "/c.npy"), testing::slurp_file(s8 + "/c.npy"));
  Tensor a = read_npy(s7 + "/a.npy");
  ASSERT_EQ(a.shape(), Shape{50});
  std::set<int64_t> seen;
  for (int64_t i = 0; i < 50; ++i) {
    int64_t v = a.data_as<int64_t>()[i];
    EXPECT_TRUE(v >= 0 && v < 10) << v;
    seen.insert(v);
  }
  EXPECT_GE(seen.size(), 5u);  // random, not constant
  Tensor b = read_npy(s7 + "/b.npy");
  for (int64_t i = 0; i < 4; ++i) EXPECT_LE(b.data_as<uint8_t>()[i], 1);
  Tensor c = read_npy(s7 + "/c.npy");
  ASSERT_EQ(c.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < 64; ++i) {
    float v = half_to_float(c.data_as<uint16_t>()[i]);
    EXPECT_TRUE(v >= -1.0f && v <= 1.0f) << v;  // [-1, 1) may round up to 1 in float16
  }
}

TEST(Vmrun, EmptyAndScalarShapesParse) {
  std::string out = fresh_dir("empty");
  expect_success({model("dtypes.vmexe"), "--input", "a=0:i64", "--input", "b=2,2:bool", "--input",
                  "c=1:half", "--output-dir", out});
  EXPECT_EQ(read_npy(out + "/a.npy").shape(), Shape{0});
  EXPECT_EQ(read_npy(out + "/b.npy").shape(), (Shape{2, 2}));
  // A 0-d input is parsed, then refused by the signature (x has rank 3).
  expect_error({model("identity.vmexe"), "--input", "x=scalar:f32"}, 1, "must have rank 3");
  expect_error({model("identity.vmexe"), "--input", "x=:f32"}, 1, "got rank 0");
}

TEST(Vmrun, SummaryWithoutOutputDir) {
  Result r = expect_success({model("const.vmexe")});
  EXPECT_NE(r.out.find("table: f32 [2, 3] = [1.5, -2, 0, 3.25, 100, -0.125]  min -2  max 100  "
                       "mean 17.1042"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mask: bool [3] = [true, false, true]"), std::string::npos) << r.out;
  r = expect_success({model("pair.vmexe"), "--input", "x=1x20x4:f32", "--input", "h=20:i64"});
  EXPECT_NE(r.out.find("flat: f32 [20, 4] = ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", ...]  min "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows: i64 [] = [20]"), std::string::npos) << r.out;
}

// ---- inspection and timing ----

TEST(Vmrun, InfoPrintsTheSignatureAndTables) {
  Result r = expect_success({model("pair.vmexe"), "--info"});
  for (const std::string& want : {
           std::string("x: f32 [batch:1..8, seq:1..512, 4]"),
           std::string("h: i64 [seq:1..512]"),
           std::string("flat: f32 [rows, 4]"),
           std::string("rows: i64 []"),
           std::string("symbols:    batch 1..8, seq 1..512, rows 0.."),
           std::string("target:     x86_64"),
           std::string("producer:   make_vmrun_fixtures: pair"),
           "format:     .vmexe " + std::to_string(serializer::kFormatMajor) + "." +
               std::to_string(serializer::kFormatMinor),
           std::string("functions:  2 (entry: main)"),
           std::string("kernels:    0 in 0 libraries"),
           std::string("constants:  0 (0 bytes)"),
           std::string("verifier:   ok"),
       }) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  r = expect_success({model("const.vmexe"), "--info"});
  EXPECT_NE(r.out.find("constants:  2 (27 bytes)"), std::string::npos) << r.out;
  // Inspection alone does not run the model; with inputs it does.
  EXPECT_EQ(r.out.find("table: f32 [2, 3] ="), std::string::npos) << r.out;
  r = expect_success({model("identity.vmexe"), "--info", "--input", "x=1x2x4:f32"});
  EXPECT_NE(r.out.find("y: f32 [1, 2, 4] = ["), std::string::npos) << r.out;
}

TEST(Vmrun, InfoOnAnInvalidExecutableNamesTheProblem) {
  expect_error({model("invalid.vmexe"), "--info"}, 1, "invalid executable");
}

TEST(Vmrun, DisasmPrintsMnemonics) {
  Result r = expect_success({model("pair.vmexe"), "--disasm"});
  for (const char* want : {"main", "rows", "dim", "mod", "cmp", "assert", "invoke", "make_shape",
                           "reshape_view", "alloc_tuple", "ret", "mul"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

TEST(Vmrun, RepeatPrintsMedianAndP90) {
  Result r = expect_success({model("identity.vmexe"), "--input", "x=2x16x4:f32", "--repeat", "5"});
  EXPECT_NE(r.out.find("latency over 5 runs (after 1 warm-up): median "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" ms, p90 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tbb executor"), std::string::npos) << r.out;
  r = expect_success({model("identity.vmexe"), "--input", "x=2x16x4:f32", "--repeat=3", "--sync"});
  EXPECT_NE(r.out.find("latency over 3 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1 thread, sync executor]"), std::string::npos) << r.out;
  r = expect_success(
      {model("identity.vmexe"), "--input", "x=2x16x4:f32", "--repeat", "2", "--threads", "2"});
  EXPECT_NE(r.out.find("[2 threads, tbb executor]"), std::string::npos) << r.out;
}

// The calls column of --profile's row for `kernel`; -1 when there is no such row.
int64_t profiled_calls(const std::string& out, const std::string& kernel) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string name;
    int64_t calls = -1;
    if (row >> name && name == kernel && row >> calls) return calls;
  }
  return -1;
}

TEST(Vmrun, ProfilePrintsKernelsByTimeAfterTheLatencyLine) {
  // kernels.vmexe's entry calls kernel add twice and kernel nothing once.
  std::vector<std::string> run = {model("kernels.vmexe"), "--input", "x=1000:f32", "--input",
                                  "y=1000:f32"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  Result r = expect_success(with({"--repeat", "3", "--profile", "--sync"}));
  size_t latency = r.out.find("latency over 3 runs");
  size_t table = r.out.find("profile over 3 runs: ");
  size_t outside = r.out.find("\noutside kernels ");
  size_t output = r.out.find("z: f32 [1000]");
  ASSERT_NE(latency, std::string::npos) << r.out;
  ASSERT_NE(table, std::string::npos) << r.out;
  ASSERT_NE(outside, std::string::npos) << r.out;
  ASSERT_NE(output, std::string::npos) << r.out;
  EXPECT_LT(latency, table);
  EXPECT_LT(table, outside);
  EXPECT_LT(outside, output);
  EXPECT_NE(r.out.find("kernel "), std::string::npos) << r.out;
  for (const char* column : {"calls", "total ms", "mean us", "% of run"}) {
    EXPECT_NE(r.out.find(column), std::string::npos) << column << "\n" << r.out;
  }
  // The timed runs only, not the warm-up.
  EXPECT_EQ(profiled_calls(r.out, "add"), 6) << r.out;
  EXPECT_EQ(profiled_calls(r.out, "nothing"), 3) << r.out;
  EXPECT_EQ(profiled_calls(r.out, "always_fails"), -1) << r.out;  // never called: no row

  // Without --repeat, the one run.
  r = expect_success(with({"--profile"}));
  EXPECT_NE(r.out.find("profile over 1 run: "), std::string::npos) << r.out;
  EXPECT_EQ(profiled_calls(r.out, "add"), 2) << r.out;
  EXPECT_EQ(r.out.find("latency"), std::string::npos) << r.out;

  // Several threads: the pooled VMs' profiles merged.
  r = expect_success(with({"--repeat", "4", "--threads", "2", "--profile"}));
  EXPECT_NE(r.out.find("[2 threads, tbb executor]"), std::string::npos) << r.out;
  EXPECT_EQ(profiled_calls(r.out, "add"), 8) << r.out;
  EXPECT_EQ(profiled_calls(r.out, "nothing"), 4) << r.out;

  // A model without kernels spends all its time outside them.
  r = expect_success({model("identity.vmexe"), "--input", "x=2x16x4:f32", "--profile"});
  EXPECT_NE(r.out.find("outside kernels "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 100.0\n"), std::string::npos) << r.out;
}

TEST(Vmrun, HelpAndVersionExitZero) {
  for (const char* flag : {"--help", "-h"}) {
    Result r = expect_success({flag});
    EXPECT_EQ(r.out.rfind("usage: vmrun model.vmexe [options]", 0), 0u) << r.out;
    for (const char* option : {"--input", "--output-dir", "--repeat", "--threads", "--sync",
                               "--seed", "--info", "--disasm", "--version", "--profile"}) {
      EXPECT_NE(r.out.find(option), std::string::npos) << option;
    }
  }
  Result r = expect_success({"--version"});
  EXPECT_EQ(r.out.rfind("vmrun (dynvm) ", 0), 0u) << r.out;
}

// ---- errors: the command line (exit 2) ----

TEST(VmrunErrors, BadCommandLines) {
  std::string m = model("identity.vmexe");
  expect_error({}, 2, "no model given");
  expect_error({m, "--bogus"}, 2, "unknown option '--bogus'");
  expect_error({m, "--bogus=1"}, 2, "unknown option '--bogus'");
  expect_error({m, "--input"}, 2, "option --input needs a value");
  expect_error({m, "--input", "--sync"}, 2, "option --input needs a value");
  expect_error({m, "--output-dir="}, 2, "option --output-dir needs a value");
  expect_error({m, "--repeat", "abc"}, 2, "option --repeat needs an integer >= 1, got 'abc'");
  expect_error({m, "--repeat", "0"}, 2, "needs an integer >= 1");
  expect_error({m, "--threads", "-2"}, 2, "needs an integer >= 1");
  expect_error({m, "--seed", "1.5"}, 2, "option --seed needs an integer");
  expect_error({m, "--sync=yes"}, 2, "option --sync takes no value");
  expect_error({m, "--profile=1"}, 2, "option --profile takes no value");
  expect_error({m, "--sync", "--threads", "2"}, 2, "cannot be combined with --threads");
  expect_error({m, "other.vmexe"}, 2, "unexpected argument 'other.vmexe'");
  expect_error({m, "--input", "=x.npy"}, 2, "empty input name");
  expect_error({m, "--input", "x="}, 2, "gives no file or SHAPE:DTYPE");
}

TEST(VmrunErrors, UnparseableShapeDtype) {
  std::string m = model("identity.vmexe");
  expect_error({m, "--input", "x=2xfoo:f32"}, 2, "cannot parse '2xfoo:f32' as SHAPE:DTYPE");
  expect_error({m, "--input", "x=2x2:float99"}, 2, "unknown dtype 'float99'");
  expect_error({m, "--input", "x=2x-1x4:f32"}, 2, "bad dim '-1'");
  expect_error({m, "--input", "x=2xx4:f32"}, 2, "bad dim ''");
}

// ---- errors: inputs (exit 1) ----

TEST(VmrunErrors, InputNamesAndCounts) {
  std::string p = model("pair.vmexe");
  expect_error({p, "--input", "foo=1:f32"}, 1, "unknown input 'foo'; the model's inputs are: x, h");
  expect_error({p, "--input", "x=1x2x4:f32"}, 1,
               "missing input 'h' (h: i64 [seq:1..512]); give it with --input h=");
  expect_error({p}, 1, "missing input 'x'");
  expect_error({p, "--input", "x=1x2x4:f32", "--input", "x=1x2x4:f32"}, 1,
               "input 'x' is given twice");
  expect_error({p, "--input", "1x2x4:f32", "--input", "2:i64", "--input", "3:i64"}, 1,
               "too many inputs: the model takes 2 (x, h)");
  expect_error({model("const.vmexe"), "--input", "x=1:f32"}, 1,
               "unknown input 'x'; the model's inputs are: (none)");
}

TEST(VmrunErrors, InputsAgainstTheSignature) {
  std::string m = model("identity.vmexe");
  expect_error({m, "--input", "x=1x2x4:i64"}, 1, "input 'x' must be f32, got i64");
  expect_error({m, "--input", "x=2x4:f32"}, 1, "input 'x' must have rank 3");
  expect_error({m, "--input", "x=9x2x4:f32"}, 1,
               "input 'x' dim 0 (batch) = 9 is outside the declared range 1..8");
  expect_error({m, "--input", "x=1x513x4:f32"}, 1, "dim 1 (seq) = 513 is outside");
  expect_error({m, "--input", "x=1x2x5:f32"}, 1, "input 'x' dim 2 must be 4, got 5");
  expect_error({model("pair.vmexe"), "--input", "x=1x4x4:f32", "--input", "h=6:i64"}, 1,
               "dim 'seq' is 4 in input 'x' dim 1 but 6 in input 'h' dim 0");
}

TEST(VmrunErrors, FailingAssertShowsItsMessage) {
  expect_error({model("pair.vmexe"), "--input", "x=1x3x4:f32", "--input", "h=3:i64"}, 1,
               "seq must be even");
}

TEST(VmrunErrors, BadNpyInputs) {
  std::string dir = fresh_dir("bad_npy");
  std::string m = model("identity.vmexe");
  std::ofstream(dir + "/text.npy") << "not an array\n";
  expect_error({m, "--input", "x=" + dir + "/text.npy"}, 1, "bad .npy file '" + dir + "/text.npy'");
  expect_error({m, "--input", "x=" + dir + "/missing.npy"}, 1, "cannot open '" + dir);
  std::vector<uint8_t> bytes = format_npy(iota_f32({1, 2, 4}));
  std::ofstream(dir + "/short.npy", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size() - 5));
  expect_error({m, "--input", "x=" + dir + "/short.npy"}, 1, "truncated data");
}

TEST(VmrunErrors, UnwritableOutputDir) {
  std::string dir = fresh_dir("unwritable");
  std::ofstream(dir + "/file") << "x";
  expect_error({model("const.vmexe"), "--output-dir", dir + "/file"}, 1,
               "cannot create output directory");
}

// ---- errors: the model file (exit 1) ----

TEST(VmrunErrors, CorruptAndForeignModelFiles) {
  std::string dir = fresh_dir("models");
  expect_error({dir + "/nonexistent.vmexe", "--input", "x=1x2x4:f32"}, 1, "cannot open");
  expect_error({dir, "--info"}, 1, dir);
  for (const char* name : {"empty.vmexe", "text.vmexe", "random.vmexe", "truncated.vmexe",
                           "flipped.vmexe", "newer_major.vmexe", "unknown_feature.vmexe"}) {
    for (const char* mode : {"--info", "--disasm", "--sync"}) {
      expect_error({model(name), mode}, 1, model(name));
    }
  }
  expect_error({model("text.vmexe")}, 1, "not a dynvm executable");
  expect_error({model("newer_major.vmexe")}, 1, "is newer than this runtime");
  expect_error({model("unknown_feature.vmexe")}, 1, "feature");
  expect_error({model("invalid.vmexe"), "--input", "x=1x2x4:f32"}, 1, "invalid executable");
}

}  // namespace
}  // namespace dynvm::vm
