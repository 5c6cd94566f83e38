// The kernel library as an artifact: the host target is detected (not assumed), the shared
// object needs no other library and exports only the ABI and the kernels, builds are
// deterministic, dumps show IR and assembly, a generic x86-64 (SSE2-only) build computes
// the same values as the host build (exercising the IR fallbacks for rounding and f16
// conversion), and linker problems are clear UserErrors.
#include <elf.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "tests/kernels/codegen/codegen_test_util.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using tir::Intrinsic;
using vm::DType;
using vm::Tensor;

bool cpuinfo_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

TEST(TargetTest, HostIsDetected) {
  Target t = Target::host();
  EXPECT_NE(t.triple.find("x86_64"), std::string::npos) << t.triple;
  EXPECT_FALSE(t.cpu.empty());
  EXPECT_EQ(t.has_feature("avx512f"), cpuinfo_has("avx512f")) << t.features;
  EXPECT_EQ(t.has_feature("avx2"), cpuinfo_has("avx2")) << t.features;
  EXPECT_EQ(t.vector_bits, cpuinfo_has("avx512f") ? 512 : cpuinfo_has("avx") ? 256 : 128);
  std::string d = t.description();
  EXPECT_EQ(d.rfind(t.triple, 0), 0u) << d;
  EXPECT_NE(d.find("cpu=" + t.cpu), std::string::npos) << d;
  EXPECT_NE(d.find("vector_bits=" + std::to_string(t.vector_bits)), std::string::npos) << d;
  std::cout << "[target] " << d << "\n";
}

TEST(TargetTest, GenericCpuHasItsBaselineIsa) {
  Target t = Target::generic("x86-64");
  EXPECT_FALSE(t.has_feature("sse4.1"));
  EXPECT_FALSE(t.has_feature("avx"));
  EXPECT_EQ(t.vector_bits, 128);
  Target v3 = Target::generic("x86-64-v3");
  EXPECT_TRUE(v3.has_feature("avx2"));
  EXPECT_TRUE(v3.has_feature("fma"));
  EXPECT_EQ(v3.vector_bits, 256);
  EXPECT_USER_ERROR(Target::generic("x86-64", "riscv99-unknown-nothing"), "cannot generate code");
}

// Y = floor(X) + round(X) (half to even) and Z = exp(X), 16 lanes + tail.
tir::LoweredFunc rounding_kernel() {
  return unary_kernel("rounding", DType::kFloat32, DType::kFloat32, 16, [](const Expr& x) {
    return tir::call(Intrinsic::kFloor, x) +
           tir::call(Intrinsic::kRound, x) * tir::make_const(x.type(), 1000) +
           tir::call(Intrinsic::kCeil, x) * tir::make_const(x.type(), 1e6);
  });
}

std::vector<tir::LoweredFunc> small_kernels() {
  return {
      binary_kernel("add", DType::kFloat32, DType::kFloat32, 16,
                    [](const Expr& a, const Expr& b) { return a + b; }),
      unary_kernel("expf", DType::kFloat32, DType::kFloat32, 16,
                   [](const Expr& x) { return tir::call(Intrinsic::kExp, x); }),
      unary_kernel("sinf", DType::kFloat32, DType::kFloat32, 16,
                   [](const Expr& x) { return tir::call(Intrinsic::kSin, x); }),
      rounding_kernel(),
      // Every f16 bit pattern to f32, and f32 to f16.
      unary_kernel("f16_to_f32", DType::kFloat16, DType::kFloat32, 16,
                   [](const Expr& x) { return tir::cast(tir::f32(x.type().lanes), x); }),
      unary_kernel("f32_to_f16", DType::kFloat32, DType::kFloat16, 16,
                   [](const Expr& x) {
                     return tir::cast(DataType{DType::kFloat16, x.type().lanes}, x);
                   }),
  };
}

// The symbols a shared object's dynamic symbol table defines and needs, and its DT_NEEDED.
struct ElfInfo {
  std::set<std::string> defined, undefined;
  std::vector<std::string> needed;
};

ElfInfo read_elf(const std::vector<uint8_t>& bytes) {
  ElfInfo info;
  auto at = [&](size_t off, size_t n) {
    if (off + n > bytes.size()) throw std::runtime_error("truncated ELF");
    return bytes.data() + off;
  };
  Elf64_Ehdr eh;
  std::memcpy(&eh, at(0, sizeof eh), sizeof eh);
  EXPECT_EQ(std::memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(eh.e_type, ET_DYN);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i)
    std::memcpy(&sh[i], at(eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr)),
                sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type == SHT_DYNSYM) {
      const Elf64_Shdr& strtab = sh[s.sh_link];
      for (size_t off = sizeof(Elf64_Sym); off < s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, at(s.sh_offset + off, sizeof sym), sizeof sym);
        std::string name(reinterpret_cast<const char*>(at(strtab.sh_offset + sym.st_name, 1)));
        (sym.st_shndx == SHN_UNDEF ? info.undefined : info.defined).insert(name);
      }
    }
    if (s.sh_type == SHT_DYNAMIC) {
      const Elf64_Shdr& strtab = sh[s.sh_link];
      for (size_t off = 0; off < s.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        std::memcpy(&d, at(s.sh_offset + off, sizeof d), sizeof d);
        if (d.d_tag == DT_NEEDED) {
          info.needed.emplace_back(
              reinterpret_cast<const char*>(at(strtab.sh_offset + d.d_un.d_val, 1)));
        }
      }
    }
  }
  return info;
}

class LibraryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    funcs_ = new std::vector<tir::LoweredFunc>(small_kernels());
    host_ = new vm::KernelLibrary(build(*funcs_));
    generic_ = new vm::KernelLibrary(build(*funcs_, Target::generic("x86-64")));
  }
  static void TearDownTestSuite() {
    delete funcs_;
    delete host_;
    delete generic_;
  }
  static std::vector<tir::LoweredFunc>* funcs_;
  static vm::KernelLibrary* host_;
  static vm::KernelLibrary* generic_;
};
std::vector<tir::LoweredFunc>* LibraryTest::funcs_ = nullptr;
vm::KernelLibrary* LibraryTest::host_ = nullptr;
vm::KernelLibrary* LibraryTest::generic_ = nullptr;

TEST_F(LibraryTest, SharedObjectIsSelfContainedAndExportsOnlyTheAbi) {
  for (const vm::KernelLibrary* lib : {host_, generic_}) {
    EXPECT_EQ(lib->format, vm::LibraryFormat::kSharedObject);
    ElfInfo elf = read_elf(lib->bytes);
    EXPECT_TRUE(elf.needed.empty()) << "needs " << elf.needed[0];
    std::set<std::string> undefined;
    for (const std::string& s : elf.undefined) {
      if (!s.empty()) undefined.insert(s);
    }
    EXPECT_TRUE(undefined.empty()) << "undefined: " << *undefined.begin();
    std::set<std::string> want = {"dynvm_kernel_abi_version", "dynvm_library_init"};
    for (const auto& f : *funcs_) want.insert(f.func.name);
    std::set<std::string> defined;
    for (const std::string& s : elf.defined) {
      if (!s.empty()) defined.insert(s);
    }
    EXPECT_EQ(defined, want);
  }
  EXPECT_EQ(host_->target, Target::host().description());
  EXPECT_NE(generic_->target.find("cpu=x86-64 "), std::string::npos) << generic_->target;
}

TEST_F(LibraryTest, BuildsAreDeterministic) {
  vm::KernelLibrary again = build_library(*funcs_, Target::host());
  EXPECT_TRUE(again.bytes == host_->bytes);
}

TEST_F(LibraryTest, GenericTargetComputesTheSameValues) {
  auto host = load_program(*host_, *funcs_);
  auto generic = load_program(*generic_, *funcs_);
  vm::VirtualMachine h(host), g(generic);
  std::vector<float> x;
  for (int i = -400; i <= 400; ++i) x.push_back(static_cast<float>(i) * 0.25f + (i % 3) * 0.0001f);
  for (float v : {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 8388609.0f, 1e20f, -1e-30f, NAN, INFINITY})
    x.push_back(v);
  auto n = static_cast<int64_t>(x.size());
  for (const char* k : {"expf", "sinf", "rounding"}) {
    Tensor yh = poisoned({n}, DType::kFloat32), yg = poisoned({n}, DType::kFloat32);
    call(h, k, {tensor(x, DType::kFloat32), yh});
    call(g, k, {tensor(x, DType::kFloat32), yg});
    std::vector<float> a = values<float>(yh), b = values<float>(yg);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) || std::isinf(b[i])) {
        EXPECT_TRUE((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i])
            << k << "(" << x[i] << ")";
      } else if (std::string(k) == "rounding") {
        // Exact operations: bit-identical whatever the ISA.
        double v = x[i];
        double want = std::floor(v) + std::nearbyint(v) * 1000 + std::ceil(v) * 1e6;
        EXPECT_EQ(a[i], b[i]) << k << "(" << x[i] << ")";
        EXPECT_NEAR(a[i], want, 1e-6 * std::abs(want)) << k << "(" << x[i] << ")";
      } else if (std::string(k) == "sinf" && std::fabs(x[i]) > 8192) {
        continue;  // beyond the range where sin's argument reduction is exact
      } else {
        // With and without fused multiply-add the polynomials round differently.
        EXPECT_NEAR(a[i], b[i], 4e-7 * std::abs(a[i]) + 1e-30) << k << "(" << x[i] << ")";
      }
    }
  }
}

TEST_F(LibraryTest, UnoptimisedBuildComputesTheSameValues) {
  BuildOptions o0;
  o0.opt_level = 0;
  vm::KernelLibrary lib = build(*funcs_, Target::host(), o0);
  EXPECT_TRUE(read_elf(lib.bytes).needed.empty());
  vm::VirtualMachine a(load_program(*host_, *funcs_)), b(load_program(lib, *funcs_));
  std::vector<float> x;
  for (int i = -300; i <= 300; ++i) x.push_back(static_cast<float>(i) * 0.3f);
  auto n = static_cast<int64_t>(x.size());
  for (const char* k : {"expf", "sinf", "rounding"}) {
    Tensor ya = poisoned({n}, DType::kFloat32), yb = poisoned({n}, DType::kFloat32);
    call(a, k, {tensor(x, DType::kFloat32), ya});
    call(b, k, {tensor(x, DType::kFloat32), yb});
    std::vector<float> va = values<float>(ya), vb = values<float>(yb);
    for (size_t i = 0; i < x.size(); ++i) {
      if (va[i] == vb[i]) continue;  // also inf
      EXPECT_NEAR(va[i], vb[i], 4e-7 * std::abs(va[i])) << k << "(" << x[i] << ")";
    }
  }
}

TEST_F(LibraryTest, HalfConversionsMatchTheCompilerOnEveryValue) {
  auto host = load_program(*host_, *funcs_);
  auto generic = load_program(*generic_, *funcs_);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  // f32 inputs: every f16 value, the midpoints between neighbours (ties round to even), and
  // values beyond the f16 range.
  std::vector<float> f;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    _Float16 a, b;
    uint16_t ha = static_cast<uint16_t>(h), hb = static_cast<uint16_t>(h + 1);
    std::memcpy(&a, &ha, 2);
    std::memcpy(&b, &hb, 2);
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    for (float v : {fa, (fa + fb) / 2, std::nextafter((fa + fb) / 2, fb)}) {
      f.push_back(v);
      f.push_back(-v);
    }
  }
  for (float v : {65520.0f, 65519.99f, 1e6f, 1e-10f, INFINITY, -INFINITY}) f.push_back(v);
  auto n = static_cast<int64_t>(all.size()), m = static_cast<int64_t>(f.size());
  for (const auto& program : {host, generic}) {
    vm::VirtualMachine vm(program);
    Tensor wide = poisoned({n}, DType::kFloat32);
    call(vm, "f16_to_f32", {tensor(all, DType::kFloat16), wide});
    std::vector<float> got = values<float>(wide);
    for (size_t i = 0; i < all.size(); ++i) {
      _Float16 h;
      std::memcpy(&h, &all[i], 2);
      float want = static_cast<float>(h);
      ASSERT_TRUE(got[i] == want || (std::isnan(got[i]) && std::isnan(want)))
          << std::hex << "f16 0x" << all[i] << " -> " << got[i];
    }
    Tensor narrow = poisoned({m}, DType::kFloat16);
    call(vm, "f32_to_f16", {tensor(f, DType::kFloat32), narrow});
    std::vector<uint16_t> bits = values<uint16_t>(narrow);
    for (size_t i = 0; i < f.size(); ++i) {
      _Float16 h = static_cast<_Float16>(f[i]);
      uint16_t want;
      std::memcpy(&want, &h, 2);
      ASSERT_EQ(bits[i], want) << "f32 " << f[i];
    }
  }
}

TEST(LibraryBuildTest, DumpsShowIrAndAssembly) {
  std::ostringstream dump;
  BuildOptions options;
  options.dump_llvm_ir = true;
  options.dump_assembly = true;
  options.dump = &dump;
  std::vector<tir::LoweredFunc> funcs = {
      unary_kernel("exp16", DType::kFloat32, DType::kFloat32, 16,
                   [](const Expr& x) { return tir::call(Intrinsic::kExp, x); })};
  build_library(funcs, Target::host(), options);
  std::string text = dump.str();
  EXPECT_NE(text.find("LLVM IR before optimisation"), std::string::npos);
  EXPECT_NE(text.find("define i32 @exp16(ptr"), std::string::npos);
  EXPECT_NE(text.find("@dynvm.math.exp.v16f32"), std::string::npos);
  EXPECT_NE(text.find("; ---- assembly ----"), std::string::npos);
  if (Target::host().vector_bits == 512) {
    // 16 x f32 stays one 512-bit register on AVX-512 machines.
    EXPECT_NE(text.find("zmm"), std::string::npos);
  }
}

TEST(LibraryBuildTest, KernelNamesMustBeUniqueIdentifiers) {
  auto f =
      unary_kernel("same", DType::kFloat32, DType::kFloat32, 1, [](const Expr& x) { return x; });
  EXPECT_USER_ERROR(build_library({f, f}, Target::host()), "kernel name 'same' is used twice");
  auto g = unary_kernel("not.an-identifier", DType::kFloat32, DType::kFloat32, 1,
                        [](const Expr& x) { return x; });
  EXPECT_USER_ERROR(build_library({g}, Target::host()), "is not a C identifier");
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(LibraryBuildTest, LinkerProblemsAreUserErrors) {
  std::vector<tir::LoweredFunc> funcs = {
      unary_kernel("copy", DType::kFloat32, DType::kFloat32, 1, [](const Expr& x) { return x; })};
  {
    ScopedEnv env("DYNVM_LD", "/nonexistent/ld.lld");
    EXPECT_USER_ERROR(build_library(funcs, Target::host(), {.opt_level = 0}),
                      "cannot run the linker '/nonexistent/ld.lld'");
  }
  {
    ScopedEnv env("DYNVM_LD", "false");
    EXPECT_USER_ERROR(build_library(funcs, Target::host(), {.opt_level = 0}),
                      "linking the kernel library failed (false exited with 1)");
  }
  {
    ScopedEnv env("TMPDIR", "/nonexistent-dir");
    EXPECT_USER_ERROR(build_library(funcs, Target::host(), {.opt_level = 0}),
                      "cannot create a temporary file");
  }
}

}  // namespace
}  // namespace dynvm::codegen::testing
