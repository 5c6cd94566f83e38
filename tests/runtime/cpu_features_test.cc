// The load-time ISA check: a library built for features the CPU lacks is refused with a
// message instead of crashing with SIGILL. The CPU is faked so that the test does not
// depend on the machine it runs on.
#include <gtest/gtest.h>

#include <set>

#include "vm/cpu_features.h"
#include "vm/error.h"

namespace dynvm::vm {
namespace {

TEST(CpuFeatures, ParsesTheIsaListOfATargetDescription) {
  EXPECT_EQ(target_isa_features("x86_64-pc-linux-gnu cpu=znver4 isa=avx2,fma,avx512f vector_bits=512"),
            (std::vector<std::string>{"avx2", "fma", "avx512f"}));
  EXPECT_TRUE(target_isa_features("x86_64 cpu=x86-64 isa=base vector_bits=128").empty());
  EXPECT_TRUE(target_isa_features("host").empty());
  EXPECT_TRUE(target_isa_features("").empty());
}

TEST(CpuFeatures, MissingFeatureIsRefusedByName) {
  std::set<std::string> cpu = {"sse4.2", "avx", "avx2", "fma"};
  auto has = [&](std::string_view f) -> std::optional<bool> { return cpu.count(std::string(f)) > 0; };
  EXPECT_NO_THROW(check_target_isa("x86_64 cpu=haswell isa=avx2,fma", "0", has));
  try {
    check_target_isa("x86_64 cpu=znver4 isa=avx2,avx512f vector_bits=512", "0", has);
    FAIL() << "an AVX-512 library must be refused on an AVX2 machine";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("avx512f"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lacks"), std::string::npos) << e.what();
  }
}

TEST(CpuFeatures, UnknownFeatureNamesAreNotHeldAgainstALibrary) {
  auto knows_nothing = [](std::string_view) -> std::optional<bool> { return std::nullopt; };
  EXPECT_NO_THROW(check_target_isa("x isa=some-future-extension", "0", knows_nothing));
}

TEST(CpuFeatures, TheHostHasTheBaselineFeaturesItReports) {
  // Every x86-64 machine these tests run on has SSE4.2 (x86-64-v2); the answer must be known.
  std::optional<bool> sse42 = host_has_cpu_feature("sse4.2");
  ASSERT_TRUE(sse42.has_value());
  EXPECT_TRUE(*sse42);
  EXPECT_FALSE(host_has_cpu_feature("not-a-feature").has_value());
}

}  // namespace
}  // namespace dynvm::vm
