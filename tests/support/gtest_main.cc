// The main() of every dynvm test binary: googletest's, plus one rule. When a fixture's
// SetUpTestSuite fails (a kernel library that no longer compiles, say), googletest reports
// each of its tests as skipped, and ctest, which treats "[  SKIPPED ]" in the output as a
// skip, would pass them. Here the first such test ends the run with a failure instead,
// before anything reports it as skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace {

class SetUpFailuresFail : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo& test) override {
    const testing::TestSuite* suite = testing::UnitTest::GetInstance()->current_test_suite();
    if (suite == nullptr || !suite->ad_hoc_test_result().Failed()) return;
    std::printf("[  FAILED  ] %s.%s: SetUpTestSuite of %s failed (the failure above)\n",
                test.test_suite_name(), test.name(), test.test_suite_name());
    std::fflush(stdout);
    std::_Exit(1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new SetUpFailuresFail);
  return RUN_ALL_TESTS();
}
