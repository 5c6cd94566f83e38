// The TIR pipeline, top to bottom. Reading lower() is reading the compiler's back half:
// each line is one pass (kernels/tir/passes/<name>.cc), and the stage the verifier checks
// says which rules hold from there on.
#include "kernels/tir/lower.h"

#include <chrono>
#include <iomanip>
#include <iostream>

#include "kernels/tir/passes/passes.h"
#include "kernels/tir/printer.h"
#include "kernels/tir/verifier.h"

namespace dynvm::tir {
namespace {

// Runs passes with the options' dumping, timing and verification around each.
class PassRunner {
 public:
  explicit PassRunner(const LowerOptions& opts)
      : opts_(opts), os_(opts.dump_stream ? *opts.dump_stream : std::cerr) {
#ifndef NDEBUG
    verify_each_ = true;
#else
    verify_each_ = opts.verify_each;
#endif
  }

  void input(const PrimFunc& f) {
    verify(f, VerifyStage::kLowered);
    if (opts_.dump_after == "input" || opts_.dump_after == "all") {
      os_ << "// IR before lowering\n" << to_string(f);
    }
  }

  template <typename Pass>
  auto run(const char* name, Pass pass, PrimFunc f, VerifyStage stage) {
    const void* before = f.body.get();
    auto start = std::chrono::steady_clock::now();
    auto out = pass(std::move(f));
    auto end = std::chrono::steady_clock::now();
    if constexpr (std::is_same_v<decltype(out), PrimFunc>) {
      if (verify_each_) verify(out, stage);
      report(name, out.body.get() != before, end - start);
      dump(name, out);
    } else {
      if (verify_each_) verify(out, stage);
      report(name, true, end - start);
      dump(name, out);
    }
    return out;
  }

 private:
  template <typename F>
  void dump(const char* name, const F& f) {
    if (opts_.dump_after == name || opts_.dump_after == "all") {
      os_ << "// IR after " << name << "\n" << to_string(f);
    }
  }

  void report(const char* name, bool changed, std::chrono::steady_clock::duration d) {
    if (!opts_.time_passes) return;
    double ms = std::chrono::duration<double, std::milli>(d).count();
    os_ << "pass " << std::left << std::setw(18) << name << std::right << std::fixed
        << std::setprecision(3) << std::setw(9) << ms << " ms" << (changed ? "" : "  (unchanged)")
        << "\n";
  }

  const LowerOptions& opts_;
  std::ostream& os_;
  bool verify_each_ = false;
};

}  // namespace

LoweredFunc lower(PrimFunc f, const LowerOptions& opts) {
  PassRunner p(opts);
  p.input(f);
  auto simplify_in_scope = [](PrimFunc g) { return simplify(std::move(g)); };
  f = p.run("simplify", simplify_in_scope, std::move(f), VerifyStage::kLowered);
  f = p.run("loop_partition", loop_partition, std::move(f), VerifyStage::kLowered);
  f = p.run("simplify", simplify_in_scope, std::move(f), VerifyStage::kLowered);
  f = p.run(
      "specialize_extents",
      [&](PrimFunc g) { return specialize_extents(std::move(g), opts.max_specialized_copies); },
      std::move(f), VerifyStage::kLowered);
  f = p.run("vectorize", vectorize, std::move(f), VerifyStage::kVectorized);
  f = p.run("unroll", unroll, std::move(f), VerifyStage::kUnrolled);
  f = p.run("flatten_storage", flatten_storage, std::move(f), VerifyStage::kFlattened);
  f = p.run(
      "simplify", [](PrimFunc g) { return simplify(std::move(g), true); }, std::move(f),
      VerifyStage::kFlattened);
  verify(f, VerifyStage::kFlattened);
  LoweredFunc out =
      p.run("outline_parallel", outline_parallel, std::move(f), VerifyStage::kFlattened);
  verify(out, VerifyStage::kFlattened);
  return out;
}

}  // namespace dynvm::tir
