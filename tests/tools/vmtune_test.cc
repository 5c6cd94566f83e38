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

#include "kernels/tune/records.h"
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
  // Measurements only: sub-range choices (records with a range) follow the profile's
  // weights, which vary from run to run.
  static size_t measurements_in(const std::string& path) {
    size_t n = 0;
    for (const tune::TuningRecord& r : tune::read_records(path)) n += r.range ? 0 : 1;
    return n;
  }
  static size_t lines_of(const std::string& path) {
    std::ifstream in(path);
    return static_cast<size_t>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }
  // vmrun on the demo's reference input of length `seq`: y and deltas match ONNX Runtime's.
  void expect_reference_outputs(const std::string& exe, int seq);
  std::string dir_;
};

TEST_F(Vmtune, RecordsAreWrittenResumedAndApplied) {
  const std::string log = dir_ + "/demo.tune.jsonl";
  // Every kernel the model calls (--min-share 0), so that which ones are tuned does not
  // depend on the profile's timings and the second run resumes all of them.
  const std::vector<std::string> args{kDemo,         "-o", log,       "--trials",    "3",
                                      "--min-share", "0",  "--sizes", "x={4,32}x16", "-q"};
  Result first = run(VMTUNE_PATH, args);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("records: " + log), std::string::npos) << first.out;
  const size_t written = measurements_in(log);
  EXPECT_GE(written, 10u);

  // Everything resumed: nothing new measured, and every resumed measurement a training row.
  const std::string rows = dir_ + "/demo.rows";
  std::vector<std::string> with_rows = args;
  with_rows.insert(with_rows.end(), {"--rows", rows});
  Result second = run(VMTUNE_PATH, with_rows);
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(measurements_in(log), written);
  size_t measured_sizes = 0;
  for (const tune::TuningRecord& r : tune::read_records(log)) {
    measured_sizes += r.range || !r.ok() ? 0 : r.sizes.size();
  }
  EXPECT_EQ(lines_of(rows), measured_sizes);

  const std::string exe = dir_ + "/demo.vmexe";
  Result vmc = run(VMC_PATH, {kDemo, "-o", exe, "--tuning-log", log});
  ASSERT_EQ(vmc.status, 0) << vmc.err;
  Result info = run(VMRUN_PATH, {exe, "--info"});
  ASSERT_EQ(info.status, 0) << info.err;
  EXPECT_EQ(info.out.find(" 0 with tuned schedules"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(": tuned: "), std::string::npos) << info.out;

  expect_reference_outputs(exe, 7);

  // A cost model trained on those rows ranks the schedules of a compile without records.
  const std::string model = dir_ + "/demo.ubj";
  Result fit = run(VMTUNE_PATH, {"--fit-model", model, rows});
  ASSERT_EQ(fit.status, 0) << fit.err;
  EXPECT_NE(fit.out.find("rows of"), std::string::npos) << fit.out;
  const std::string ranked = dir_ + "/ranked.vmexe";
  Result with_model = run(VMC_PATH, {kDemo, "-o", ranked, "--cost-model", model, "-q"});
  ASSERT_EQ(with_model.status, 0) << with_model.err;
  Result ranked_info = run(VMRUN_PATH, {ranked, "--info"});
  EXPECT_NE(ranked_info.out.find("0 with tuned schedules"), std::string::npos) << ranked_info.out;
  expect_reference_outputs(ranked, 7);
  const std::string plain = dir_ + "/plain.vmexe";
  ASSERT_EQ(run(VMC_PATH, {kDemo, "-o", plain, "--no-cost-model", "-q"}).status, 0);
  EXPECT_NE(run(VMRUN_PATH, {plain, "--info"}).out.find(", 0 ranked by the cost model"),
            std::string::npos);
}

// The model that ships with dynvm ranks with no flags; vmrun --info names what it chose.
TEST_F(Vmtune, WithNoFlagsTheShippedModelRanksSchedules) {
  const std::string exe = dir_ + "/demo.vmexe";
  Result vmc = run(VMC_PATH, {kDemo, "-o", exe});
  ASSERT_EQ(vmc.status, 0) << vmc.err;
  EXPECT_NE(vmc.err.find(" ranked, "), std::string::npos) << vmc.err;
  Result info = run(VMRUN_PATH, {exe, "--info"});
  ASSERT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("ranked by the cost model"), std::string::npos) << info.out;
  expect_reference_outputs(exe, 7);
}

TEST_F(Vmtune, BadCostModelsAndTrainingRowsAreOneLine) {
  const std::string bad = dir_ + "/bad.ubj";
  std::ofstream(bad) << "not a model";
  Result vmc = run(VMC_PATH, {kDemo, "-o", dir_ + "/x.vmexe", "--cost-model", bad});
  EXPECT_EQ(vmc.status, 1);
  EXPECT_NE(vmc.err.find("vmc: "), std::string::npos) << vmc.err;
  EXPECT_EQ(std::count(vmc.err.begin(), vmc.err.end(), '\n'), 1) << vmc.err;
  Result missing = run(VMC_PATH, {kDemo, "-o", dir_ + "/x.vmexe", "--cost-model", dir_ + "/no"});
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
  Result fit = run(VMTUNE_PATH, {"--fit-model", dir_ + "/m.ubj", dir_ + "/none.rows"});
  EXPECT_EQ(fit.status, 1);
  EXPECT_NE(fit.err.find("vmtune: cannot open"), std::string::npos) << fit.err;
  Result usage = run(VMTUNE_PATH, {"--fit-model", dir_ + "/m.ubj"});
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("--fit-model takes OUT.ubj ROWS"), std::string::npos) << usage.err;
}

// Sub-range schedules (kernels/tune/ranges.h): records that give a kernel other knobs for
// sizes up to 8 along a dim that varies become variants under a range condition, and the
// executable computes the same at sizes on both sides.
TEST_F(Vmtune, SubRangeSchedulesBecomeGuardedVariants) {
  const std::string log = dir_ + "/demo.tune.jsonl";
  // Three kernels: which has the most time depends on the machine's load, and one whose
  // arguments do not vary with x is measured at one size only.
  Result tuned = run(VMTUNE_PATH, {kDemo, "-o", log, "--trials", "2", "--max-kernels", "3",
                                   "--sizes", "x={4,32}x16", "-q"});
  ASSERT_EQ(tuned.status, 0) << tuned.err;
  std::vector<tune::TuningRecord> records = tune::read_records(log);
  auto at_both = std::find_if(records.begin(), records.end(),
                              [](const tune::TuningRecord& r) { return r.sizes.size() == 2; });
  ASSERT_NE(at_both, records.end()) << "no kernel was measured at both sizes";
  const tune::TuningRecord measured = *at_both;
  // The first argument dim that differs between the two sizes is symbolic in the kernel.
  uint32_t arg = 0, axis = 0;
  bool found = false;
  for (uint32_t a = 0; a < measured.sizes[0].args.size() && !found; ++a) {
    for (uint32_t d = 0; d < measured.sizes[0].args[a].size() && !found; ++d) {
      if (measured.sizes[0].args[a][d] != measured.sizes[1].args[a][d]) {
        arg = a;
        axis = d;
        found = true;
      }
    }
  }
  ASSERT_TRUE(found);
  const std::string ranged = dir_ + "/ranged.jsonl";
  for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 8}, {9, INT64_MAX}}) {
    tune::TuningRecord r = measured;
    r.range = tune::SizeRange{arg, axis, lo, hi};
    tune::append_record(ranged, r);
  }
  const std::string exe = dir_ + "/demo.vmexe";
  Result vmc = run(VMC_PATH, {kDemo, "-o", exe, "--tuning-log", ranged});
  ASSERT_EQ(vmc.status, 0) << vmc.err;
  Result info = run(VMRUN_PATH, {exe, "--info"});
  EXPECT_NE(info.out.find(" in 0..8: "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(" in 9..: "), std::string::npos) << info.out;
  expect_reference_outputs(exe, 7);
  expect_reference_outputs(exe, 64);
}

void Vmtune::expect_reference_outputs(const std::string& exe, int seq) {
  const std::string ref =
      std::string(DYNVM_SOURCE_DIR) + "/examples/demo/reference/seq_" + std::to_string(seq);
  const std::string out = dir_ + "/out_" + std::to_string(seq);
  Result ran = run(VMRUN_PATH, {exe, "--input", "x=" + ref + "/inputs/x.npy", "--output-dir", out});
  ASSERT_EQ(ran.status, 0) << ran.err;
  for (const char* name : {"y", "deltas"}) {
    vm::Tensor got = vm::read_npy(out + "/" + name + ".npy");
    vm::Tensor want = vm::read_npy(ref + "/outputs/" + name + ".npy");
    ASSERT_EQ(got.shape(), want.shape()) << name << " at seq " << seq;
    ASSERT_EQ(got.dtype(), vm::DType::kFloat32) << name;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double g = got.data_as<float>()[i];
      const double w = want.dtype() == vm::DType::kFloat64 ? want.data_as<double>()[i]
                                                           : want.data_as<float>()[i];
      EXPECT_NEAR(g, w, 1e-4 + 1e-3 * std::abs(w)) << name << "[" << i << "] at seq " << seq;
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
