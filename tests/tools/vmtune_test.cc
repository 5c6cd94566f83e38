// Runs the real `vmtune`, `vmc` and `vmrun` binaries on the bundled demo model: records are
// written, a second run resumes them instead of measuring again, `vmc --tuning-log`
// applies them (vmrun --info names the tuned kernels) and the tuned executable still
// matches the demo's ONNX Runtime reference; bad command lines and records files are one
// line and a non-zero exit. Few trials on purpose: nothing here depends on timings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/support/run_program.h"
#include "vm/npy.h"

namespace dynvm {
namespace {

namespace fs = std::filesystem;
using Result = testing::ProgramResult;

const std::string kDemo = std::string(DYNVM_SOURCE_DIR) + "/examples/demo/demo.onnx";

class Vmtune : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("vmtune_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(const std::string& program, const std::vector<std::string>& args) {
    const std::string scratch = dir_ + "/scratch";
    fs::create_directories(scratch);
    return testing::run_program(program, args, scratch);
  }
  static size_t lines_of(const std::string& path) {
    std::ifstream in(path);
    return static_cast<size_t>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }
  std::string dir_;
};

TEST_F(Vmtune, RecordsAreWrittenResumedAndApplied) {
  const std::string log = dir_ + "/demo.tune.jsonl";
  const std::vector<std::string> args{kDemo,           "-o", log,       "--trials",    "3",
                                      "--max-kernels", "2",  "--sizes", "x={4,32}x16", "-q"};
  Result first = run(VMTUNE_PATH, args);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("records: " + log), std::string::npos) << first.out;
  const size_t written = lines_of(log);
  EXPECT_GE(written, 2u);
  EXPECT_LE(written, 6u);

  Result second = run(VMTUNE_PATH, args);  // everything resumed: nothing new measured
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(lines_of(log), written);

  const std::string exe = dir_ + "/demo.vmexe";
  Result vmc = run(VMC_PATH, {kDemo, "-o", exe, "--tuning-log", log});
  ASSERT_EQ(vmc.status, 0) << vmc.err;
  Result info = run(VMRUN_PATH, {exe, "--info"});
  ASSERT_EQ(info.status, 0) << info.err;
  EXPECT_EQ(info.out.find(" 0 with tuned schedules"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(": tuned: "), std::string::npos) << info.out;

  const std::string ref = std::string(DYNVM_SOURCE_DIR) + "/examples/demo/reference/seq_7";
  Result ran = run(VMRUN_PATH,
                   {exe, "--input", "x=" + ref + "/inputs/x.npy", "--output-dir", dir_ + "/out"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  for (const char* name : {"y", "deltas"}) {
    vm::Tensor got = vm::read_npy(dir_ + "/out/" + name + ".npy");
    vm::Tensor want = vm::read_npy(ref + "/outputs/" + name + ".npy");
    ASSERT_EQ(got.shape(), want.shape()) << name;
    ASSERT_EQ(got.dtype(), vm::DType::kFloat32) << name;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double g = got.data_as<float>()[i];
      const double w = want.dtype() == vm::DType::kFloat64 ? want.data_as<double>()[i]
                                                           : want.data_as<float>()[i];
      EXPECT_NEAR(g, w, 1e-4 + 1e-3 * std::abs(w)) << name << "[" << i << "]";
    }
  }
}

// A model with a scalar input that must hold a valid value (Silero VAD's sample rate):
// --input gives it, the sizes give the tensors' shapes.
TEST_F(Vmtune, InputsWithValuesTakeThemInEveryRun) {
  const std::string model = std::string(DYNVM_SOURCE_DIR) + "/.models/silero_vad_v5.onnx";
  const std::string sr = dir_ + "/sr.npy";
  vm::write_npy(vm::Tensor::from_vector(std::vector<int64_t>{16000}, {}, vm::DType::kInt64), sr);
  const std::string log = dir_ + "/silero.tune.jsonl";
  Result r = run(VMTUNE_PATH, {model, "--input", "sr=" + sr, "--sizes", "input=2x512;state=2x2x128",
                               "--trials", "2", "--max-kernels", "2", "-o", log, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("vmtune: warning: skipping"), std::string::npos) << r.err;  // every size ran
  EXPECT_GE(lines_of(log), 2u);
  // Without a valid sample rate the model runs at none of the sizes: one line saying so.
  Result none = run(VMTUNE_PATH, {model, "--sizes", "input=2x512;state=2x2x128", "-o", log, "-q"});
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("the model ran at none of the sizes"), std::string::npos) << none.err;
}

TEST_F(Vmtune, BadCommandLinesAndRecordsAreOneLine) {
  auto expect_error = [&](const std::string& program, const std::vector<std::string>& args,
                          int status, const std::string& substring) {
    Result r = run(program, args);
    EXPECT_EQ(r.status, status) << r.err;
    EXPECT_NE(r.err.find(substring), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  expect_error(VMTUNE_PATH, {kDemo, "--trials", "0"}, 2, "vmtune: --trials: '0' is not a number");
  expect_error(VMTUNE_PATH, {kDemo, "--search", "genetic"}, 2, "is not model or random");
  expect_error(VMTUNE_PATH, {kDemo, "--sizes", "y=4x16"}, 2, "the model has no input y");
  expect_error(VMTUNE_PATH, {kDemo, "--input", "y=a.npy"}, 2, "--input: the model has no input y");
  expect_error(VMTUNE_PATH, {kDemo, "--input", "x"}, 2, "--input expects NAME=FILE.npy");
  expect_error(VMTUNE_PATH, {dir_ + "/missing.onnx"}, 1, "vmtune: ");
  const std::string bad = dir_ + "/bad.jsonl";
  std::ofstream(bad) << "{\"version\":1}\n{}\n";
  expect_error(VMC_PATH, {kDemo, "-o", dir_ + "/x.vmexe", "--tuning-log", bad}, 1,
               "bad.jsonl:1: not a tuning record");
  expect_error(VMC_PATH, {kDemo, "-o", dir_ + "/x.vmexe", "--tuning-log", dir_ + "/none.jsonl"}, 1,
               "cannot open");
  Result help = run(VMTUNE_PATH, {"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: vmtune"), std::string::npos);
}

}  // namespace
}  // namespace dynvm
