// The tuner's machinery: the knob space, the records file, the measuring protocol, and
// measurement in a child process (the real vmtune binary as the worker, VMTUNE_PATH) with
// its isolation: a worker that hangs or crashes costs the candidate it was running, not
// the tuner. Nothing here asserts a time.
#include "kernels/tune/tuner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "kernels/ops/elementwise.h"
#include "kernels/ops/matmul.h"
#include "kernels/tune/knob_space.h"
#include "kernels/tune/measure.h"
#include "kernels/tune/measure_protocol.h"
#include "kernels/tune/ranges.h"
#include "kernels/tune/records.h"
#include "kernels/tune/search_study.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::tune {
namespace {

namespace fs = std::filesystem;

std::vector<ops::KnobSpec> three_knobs() {
  return {{"a", {1, 2, 4}, 2}, {"b", {0, 1}, 0}, {"c", {8}, 8}};
}

TEST(KnobSpace, IndicesAndConfigurationsCorrespond) {
  KnobSpace space(three_knobs());
  ASSERT_EQ(space.size(), 6u);
  std::set<ops::KnobValues> seen;
  for (uint64_t i = 0; i < space.size(); ++i) {
    ops::KnobValues v = space.at(i);
    EXPECT_EQ(space.index_of(v), i);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(space.at(space.default_index()), (ops::KnobValues{{"a", 2}, {"b", 0}, {"c", 8}}));
  EXPECT_USER_ERROR(space.index_of({{"a", 3}}), "knob a=3 is not one of its values");
}

TEST(KnobSpace, ANeighbourDiffersInExactlyOneKnob) {
  KnobSpace space(three_knobs());
  std::mt19937_64 rng(3);
  for (int k = 0; k < 100; ++k) {
    const uint64_t i = space.random(rng);
    const uint64_t j = space.neighbour(i, rng);
    ASSERT_NE(i, j);
    int differ = 0;
    for (const auto& [name, value] : space.at(i)) differ += space.at(j).at(name) != value;
    EXPECT_EQ(differ, 1);
  }
  KnobSpace fixed({{"c", {8}, 8}});
  // A default fitted to the shape that is not a candidate is in the space too.
  KnobSpace fitted({{"ow_block", {4, 8, 16}, 3}});
  EXPECT_EQ(fitted.size(), 4u);
  EXPECT_EQ(fitted.at(fitted.default_index()).at("ow_block"), 3);
  EXPECT_EQ(fixed.neighbour(0, rng), 0u);
}

TuningRecord sample_record(double cost, const std::string& error = "") {
  TuningRecord r;
  r.workload = "MatMul|f32[s0,64]|f32[64,32]";
  r.kernel = "k0_MatMul";
  r.target = "x86_64 test";
  r.knobs = {{"tile_m", 8}, {"parallel", 1}};
  r.sizes = {{{{4, 64}, {64, 32}, {4, 32}}, 0.25, cost * 2},
             {{{16, 64}, {64, 32}, {16, 32}}, 0.75, cost}};
  r.cost_ns = cost;
  r.error = error;
  return r;
}

class RecordsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             ("dynvm_records_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
              "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl"))
                .string();
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(RecordsFile, RoundTripAndBestPerWorkload) {
  append_record(path_, sample_record(300));
  append_record(path_,
                sample_record(100, "wrong result: element 3 is 1, the default schedule's 2"));
  append_record(path_, sample_record(200));
  TuningRecord other = sample_record(50);
  other.target = "another machine";
  append_record(path_, other);
  std::vector<TuningRecord> back = read_records(path_);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(to_json_line(back[0]), to_json_line(sample_record(300)));
  EXPECT_EQ(back[1].error, "wrong result: element 3 is 1, the default schedule's 2");
  EXPECT_EQ(back[0].sizes[1].args[2], (std::vector<int64_t>{16, 32}));
  // The failed candidate and the other machine's record never win.
  auto best = best_records(back, "x86_64 test");
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best.begin()->second.cost_ns, 200);
  EXPECT_EQ(best_records(back).begin()->second.cost_ns, 50);  // any target
}

TEST_F(RecordsFile, ACutShortLastLineIsSkippedAndOtherDamageNamed) {
  EXPECT_TRUE(read_records(path_).empty());  // no file yet: nothing to resume
  append_record(path_, sample_record(300));
  const std::string line = to_json_line(sample_record(100));
  {
    std::ofstream out(path_, std::ios::app);
    out << line.substr(0, line.size() / 2);  // a run killed while writing
  }
  ASSERT_EQ(read_records(path_).size(), 1u);
  {
    std::ofstream out(path_, std::ios::app);
    out << "\n{\"version\": 1}\n";
  }
  EXPECT_USER_ERROR(read_records(path_), path_ + ":2: not a tuning record");
  EXPECT_USER_ERROR(parse_record(R"({"version":99,"workload":"x"})"),
                    "tuning record version 99 (this dynvm reads version 1)");
}

TEST_F(RecordsFile, SubRangeChoicesRoundTripAndTheLatestGroupCounts) {
  auto choice = [](int64_t lo, int64_t hi, int64_t tile) {
    TuningRecord r = sample_record(100);
    r.range = SizeRange{0, 0, lo, hi};
    r.knobs = {{"tile_m", tile}};
    return r;
  };
  append_record(path_, choice(0, 8, 4));
  append_record(path_, choice(9, INT64_MAX, 16));
  append_record(path_, sample_record(90));  // a measurement in between ends the group
  append_record(path_, choice(0, 32, 8));
  append_record(path_, choice(33, INT64_MAX, 32));
  std::vector<TuningRecord> back = read_records(path_);
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(back[1].range, (SizeRange{0, 0, 9, INT64_MAX}));
  EXPECT_FALSE(back[2].range.has_value());
  auto groups = range_records(back, "x86_64 test");
  ASSERT_EQ(groups.size(), 1u);
  const std::vector<TuningRecord>& latest = groups.begin()->second;
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].range->hi, 32);
  EXPECT_EQ(latest[1].knobs.at("tile_m"), 32);
  // Choices are not measurements: the best measured record is still the measured one.
  EXPECT_EQ(best_records(back).begin()->second.cost_ns, 90);
}

// Three configurations measured at four sizes along a symbolic dim: A is best at the two
// small sizes, B at the two large ones, C is second everywhere.
TEST(SplitByRange, TwoConfigurationsWhenNoneServesTheWholeRange) {
  Workload w;
  w.arg_types = {{vm::DType::kFloat32, {arith::Var("s0"), arith::make_int(8)}}};
  for (int64_t n : {4, 16, 64, 256}) w.sizes.push_back({{{n, 8}, {n, 8}}, 0.25});
  auto m = [](int64_t a, std::vector<double> ns) {
    Measurement x;
    x.knobs = {{"a", a}};
    x.ns = std::move(ns);
    return x;
  };
  std::vector<Measurement> measured{m(1, {1, 2, 40, 200}), m(2, {5, 9, 10, 40}),
                                    m(3, {2, 3, 12, 50})};
  std::vector<RangeChoice> split = split_by_range(w, measured);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0].range, (SizeRange{0, 0, 0, 16}));
  EXPECT_EQ(split[0].knobs.at("a"), 1);
  EXPECT_EQ(split[1].range, (SizeRange{0, 0, 17, INT64_MAX}));
  EXPECT_EQ(split[1].knobs.at("a"), 2);
  EXPECT_DOUBLE_EQ(split[0].cost_ns + split[1].cost_ns, 0.25 * (1 + 2 + 10 + 40));
  // One configuration best everywhere: nothing to split.
  std::vector<Measurement> dominated{m(1, {1, 2, 4, 8}), m(2, {2, 3, 5, 9})};
  EXPECT_TRUE(split_by_range(w, dominated).empty());
  // A dim that is static in the kernel is never split on.
  w.arg_types[0].shape[0] = arith::make_int(4);
  EXPECT_TRUE(split_by_range(w, measured).empty());
}

TEST(MeasureProtocol, RequestsAndResultsRoundTrip) {
  MeasureRequest r;
  r.threads = 2;
  r.min_time_ms = 5;
  r.symbols = {"ref", "c0", "c1"};
  r.arg_dtypes = {vm::DType::kFloat32, vm::DType::kInt64, vm::DType::kFloat32};
  r.num_inputs = 2;
  r.sizes = {{{2, 3}, {}, {2, 3}}, {{0, 3}, {}, {0, 3}}};
  r.jobs = {{1, 0}, {2, 0}, {1, 1}};
  MeasureRequest back = parse_request(format_request(r));
  EXPECT_EQ(back.threads, 2);
  EXPECT_EQ(back.symbols, r.symbols);
  EXPECT_EQ(back.arg_dtypes, r.arg_dtypes);
  EXPECT_EQ(back.num_inputs, 2u);
  EXPECT_EQ(back.sizes, r.sizes);
  EXPECT_EQ(back.jobs, r.jobs);
  EXPECT_USER_ERROR(parse_request("dynvm-measure 2"), "unknown version");

  MeasureResult ok{2, 1, 1234.5, ""}, bad{1, 0, 0, "wrong result:\nline two"}, parsed;
  ASSERT_TRUE(parse_result(format_result(ok), &parsed));
  EXPECT_EQ(parsed.symbol, 2u);
  EXPECT_EQ(parsed.ns, 1234.5);
  ASSERT_TRUE(parse_result(format_result(bad), &parsed));
  EXPECT_EQ(parsed.error, "wrong result: line two");
  EXPECT_FALSE(parse_result("hello", &parsed));
}

// A static matmul [8, 16] x [16, 8] as the compiler would ask for it.
Workload small_matmul() {
  Workload w;
  w.key = "test matmul";
  w.name = "matmul";
  const ops::TensorType a{vm::DType::kFloat32, {arith::make_int(8), arith::make_int(16)}};
  const ops::TensorType b{vm::DType::kFloat32, {arith::make_int(16), arith::make_int(8)}};
  w.arg_types = {a, b};
  w.build = [](const std::vector<ops::TensorType>& in) { return ops::matmul(in[0], in[1]); };
  w.sizes = {{{{8, 16}, {16, 8}, {8, 8}}, 1.0}};
  return w;
}

MeasureOptions worker_options() {
  MeasureOptions o;
  o.worker_command = {VMTUNE_PATH, "--measure-worker"};
  o.min_time_ms = 1;
  o.timeout_s = 60;
  return o;
}

TEST(Measure, CandidatesAreCheckedAndTimedInAChildProcess) {
  Workload w = small_matmul();
  KnobSpace space(w.build(w.arg_types).knobs);
  std::vector<ops::KnobValues> candidates{
      space.at(0), space.at(space.size() - 1), {{"no_such_knob", 1}}};
  std::vector<Measurement> m = measure(w, candidates, worker_options());
  ASSERT_EQ(m.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(m[i].ok()) << m[i].error;
    ASSERT_EQ(m[i].ns.size(), 1u);
    EXPECT_GT(m[i].ns[0], 0);
    EXPECT_EQ(m[i].cost_ns, m[i].ns[0]);
  }
  EXPECT_NE(m[2].error.find("does not lower"), std::string::npos) << m[2].error;
}

TEST(Measure, AHangingOrCrashingWorkerCostsItsCandidate) {
  Workload w = small_matmul();
  MeasureOptions hang = worker_options();
  hang.worker_command = {"/bin/sh", "-c", "sleep 30", "sh"};
  hang.timeout_s = 0.5;
  std::vector<Measurement> m = measure(w, {{}, {}}, hang);
  for (const Measurement& one : m) EXPECT_EQ(one.error, "timed out after 0.5 s");
  MeasureOptions crash = worker_options();
  crash.worker_command = {"/bin/sh", "-c", "kill -SEGV $$", "sh"};
  m = measure(w, {{}}, crash);
  EXPECT_NE(m[0].error.find("crashed (Segmentation fault"), std::string::npos) << m[0].error;
}

TEST(Tuner, RecordsAreWrittenAndAResumedRunMeasuresNothingTwice) {
  const std::string path = (fs::temp_directory_path() / "dynvm_tuner_resume.jsonl").string();
  fs::remove(path);
  Workload w = small_matmul();
  TuneOptions o;
  o.trials = 6;
  o.batch = 3;
  o.measure = worker_options();
  o.records_path = path;
  TuneResult first;
  {
    Tuner tuner(o);
    first = tuner.tune(w);
  }
  EXPECT_EQ(first.trials, 6);
  EXPECT_GT(first.default_ns, 0);  // the default schedule is always measured
  EXPECT_GT(first.best_ns, 0);
  EXPECT_LE(first.best_ns, first.default_ns);
  ASSERT_EQ(first.best_so_far.size(), 6u);
  for (size_t i = 1; i < first.best_so_far.size(); ++i) {
    EXPECT_LE(first.best_so_far[i], first.best_so_far[i - 1]);
  }
  std::vector<TuningRecord> written = read_records(path);
  ASSERT_EQ(written.size(), 6u);
  EXPECT_EQ(written[0].workload, "test matmul");
  // The same budget again: everything is resumed from the file, nothing measured.
  Tuner again(o, written);
  TuneResult second = again.tune(w);
  EXPECT_EQ(second.trials, 6);
  EXPECT_EQ(read_records(path).size(), 6u);
  EXPECT_EQ(second.best, best_records(written).at("test matmul").knobs);
  fs::remove(path);
}

// The search study replays the tuner against a table: nothing is measured, both searches
// see the table's costs, every replay starts at the default schedule, and a budget as large
// as the space finds the best in every seed.
TEST(SearchStudy, ReplaysBothSearchesAgainstTheTable) {
  // An elementwise add: 8 configurations (vector width x parallel), a replay in seconds.
  Workload w;
  w.key = "test add";
  w.name = "add";
  const ops::TensorType t{vm::DType::kFloat32, {arith::make_int(8), arith::make_int(16)}};
  w.arg_types = {t, t};
  w.build = [](const std::vector<ops::TensorType>& in) {
    return ops::binary(ops::BinaryOp::kAdd, in[0], in[1]);
  };
  w.sizes = {{{{8, 16}, {8, 16}, {8, 16}}, 1.0}};
  KnobSpace space(w.build(w.arg_types).knobs);
  ASSERT_GE(space.size(), 8u);
  std::vector<Measurement> table;
  const uint64_t best = space.size() / 3;  // not the default, not the first index
  ASSERT_NE(best, space.default_index());
  for (uint64_t i = 0; i < space.size(); ++i) {
    Measurement m;
    m.knobs = space.at(i);
    m.cost_ns = i == best ? 100.0 : 200.0 + static_cast<double>(i);
    m.ns = {m.cost_ns};
    if (i == space.size() - 1 && i != space.default_index()) m.error = "wrong result";
    table.push_back(m);
  }
  StudyOptions o;
  o.trials = static_cast<int>(space.size());
  o.seeds = 3;
  o.batch = 2;
  SearchStudy s = replay_searches(w, table, o);
  EXPECT_EQ(s.space, space.size());
  EXPECT_EQ(s.best_ns, 100.0);
  EXPECT_EQ(s.default_ns, table[space.default_index()].cost_ns);
  for (const SearchCurve* c : {&s.model, &s.random}) {
    ASSERT_EQ(c->quality.size(), space.size());
    ASSERT_EQ(c->trials_to_target.size(), 3u);
    // The first trial is the default schedule's, in every seed.
    EXPECT_DOUBLE_EQ(c->quality[0], 100.0 / s.default_ns);
    for (size_t t = 1; t < c->quality.size(); ++t) EXPECT_GE(c->quality[t], c->quality[t - 1]);
    EXPECT_DOUBLE_EQ(c->quality.back(), 1.0);
    for (int n : c->trials_to_target) {
      EXPECT_GE(n, 2);
      EXPECT_LE(n, static_cast<int>(space.size()));
    }
    EXPECT_EQ(seeds_reaching(*c), 3);
  }
  SearchCurve hand;
  hand.trials_to_target = {3, 0, 5, 7};  // one seed never got there: counts as budget + 1
  EXPECT_EQ(median_trials(hand, 10), 6.0);
  EXPECT_EQ(seeds_reaching(hand), 3);
  std::vector<Measurement> broken(table.size());
  for (Measurement& m : broken) m.error = "crashed";
  EXPECT_USER_ERROR(replay_searches(w, broken, o), "no configuration could be measured");
}

}  // namespace
}  // namespace dynvm::tune
