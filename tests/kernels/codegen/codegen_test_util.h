// Helpers for the code generator's tests: TIR kernels written by hand in flattened form,
// an Executable that calls each kernel from a bytecode function of the same name (so that
// generated libraries go through the real runtime path: Program::load, the verifier, the
// memfd loader, the interpreter's InvokeKernel), tensors, and poisoned outputs.
#pragma once

#include "tests/support/expect_user_error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "kernels/tir/expr.h"
#include "kernels/tir/stmt.h"
#include "vm/error.h"
#include "vm/interpreter.h"
#include "vm/program.h"
#include "vm/tensor.h"
#include "vm/value.h"

namespace dynvm::codegen::testing {

using arith::Var;
using tir::BufferRef;
using tir::DataType;
using tir::ForKind;

inline BufferRef buffer(const std::string& name, vm::DType dtype, std::vector<arith::Expr> shape,
                        tir::BufferScope scope = tir::BufferScope::kGlobal) {
  return std::make_shared<const tir::Buffer>(name, dtype, std::move(shape), scope);
}

inline tir::Expr load(const BufferRef& b, arith::Expr index) {
  return tir::buffer_load(b, {std::move(index)});
}

inline tir::Stmt store(const BufferRef& b, arith::Expr index, tir::Expr value) {
  return tir::make_store(b, {std::move(index)}, std::move(value));
}

inline tir::Stmt serial(const Var& v, arith::Expr min, arith::Expr extent, tir::Stmt body) {
  return tir::make_for(v, std::move(min), std::move(extent), ForKind::kSerial, std::move(body));
}

inline tir::LoweredFunc kernel(std::string name, std::vector<BufferRef> params, size_t num_inputs,
                               tir::Stmt body, std::vector<tir::ParallelRegion> regions = {}) {
  tir::LoweredFunc f;
  f.func.name = std::move(name);
  f.func.params = std::move(params);
  f.func.num_inputs = num_inputs;
  f.func.body = std::move(body);
  f.regions = std::move(regions);
  return f;
}

// out[i] = f(in[i]) for i < n, n symbolic. lanes > 1: a vector main loop over whole
// vectors and a scalar tail, the shape the TIR vectorize + loop-partition passes produce.
inline tir::LoweredFunc unary_kernel(const std::string& name, vm::DType in, vm::DType out,
                                     int lanes,
                                     const std::function<tir::Expr(const tir::Expr&)>& f) {
  Var n("n");
  BufferRef X = buffer("X", in, {n});
  BufferRef Y = buffer("Y", out, {n});
  Var i("i");
  tir::Stmt scalar_body = store(Y, i, f(load(X, i)));
  if (lanes == 1) return kernel(name, {X, Y}, 1, serial(i, 0, n, scalar_body));
  Var io("io");
  arith::Expr base = io * arith::Expr(lanes);
  tir::Stmt vector_loop =
      serial(io, 0, arith::floordiv(n, lanes),
             tir::make_vector_store(Y, base, 1, f(tir::vector_buffer_load(X, base, 1, lanes))));
  arith::Expr tail_start = arith::floordiv(n, lanes) * arith::Expr(lanes);
  tir::Stmt tail = serial(i, tail_start, n - tail_start, scalar_body);
  return kernel(name, {X, Y}, 1, tir::make_seq({vector_loop, tail}));
}

// out[i] = f(a[i], b[i]), same structure as unary_kernel.
inline tir::LoweredFunc binary_kernel(
    const std::string& name, vm::DType in, vm::DType out, int lanes,
    const std::function<tir::Expr(const tir::Expr&, const tir::Expr&)>& f) {
  Var n("n");
  BufferRef A = buffer("A", in, {n});
  BufferRef B = buffer("B", in, {n});
  BufferRef C = buffer("C", out, {n});
  Var i("i");
  tir::Stmt scalar_body = store(C, i, f(load(A, i), load(B, i)));
  if (lanes == 1) return kernel(name, {A, B, C}, 2, serial(i, 0, n, scalar_body));
  Var io("io");
  arith::Expr base = io * arith::Expr(lanes);
  tir::Stmt vector_loop =
      serial(io, 0, arith::floordiv(n, lanes),
             tir::make_vector_store(C, base, 1,
                                    f(tir::vector_buffer_load(A, base, 1, lanes),
                                      tir::vector_buffer_load(B, base, 1, lanes))));
  arith::Expr tail_start = arith::floordiv(n, lanes) * arith::Expr(lanes);
  return kernel(name, {A, B, C}, 2,
                tir::make_seq({vector_loop, serial(i, tail_start, n - tail_start, scalar_body)}));
}

// Builds `funcs` into one library and reports how long LLVM took (the suite has a budget).
inline vm::KernelLibrary build(const std::vector<tir::LoweredFunc>& funcs,
                               const Target& target = Target::host(),
                               const BuildOptions& options = {}) {
  auto start = std::chrono::steady_clock::now();
  vm::KernelLibrary lib = build_library(funcs, target, options);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[codegen] built " << funcs.size() << " kernels (" << lib.bytes.size()
            << " bytes) for " << target.cpu << " in " << s << " s\n";
  return lib;
}

// An executable with one bytecode function per kernel, named like the kernel, that takes
// the kernel's arguments (inputs, then outputs) and returns the last one. Function 0 is a
// trivial entry with no inputs.
inline vm::Executable executable_for(const vm::KernelLibrary& lib,
                                     const std::vector<tir::LoweredFunc>& funcs) {
  vm::Executable exe;
  exe.target = lib.target;
  exe.producer = "tests/kernels/codegen";
  exe.libraries = {lib};
  exe.functions.push_back(vm::Function{
      "main",
      0,
      1,
      {vm::Instruction{vm::Opcode::LoadImm, {0, 0}}, vm::Instruction{vm::Opcode::Ret, {0}}}});
  for (size_t k = 0; k < funcs.size(); ++k) {
    const tir::PrimFunc& f = funcs[k].func;
    auto nargs = static_cast<uint32_t>(f.params.size());
    vm::Kernel kernel{f.name,
                      0,
                      static_cast<uint32_t>(f.num_inputs),
                      static_cast<uint32_t>(nargs - f.num_inputs),
                      {{f.name, {}}},
                      ""};
    exe.kernels.push_back(kernel);
    std::vector<int64_t> args{static_cast<int64_t>(k), static_cast<int64_t>(f.num_inputs)};
    for (uint32_t r = 0; r < nargs; ++r) args.push_back(r);
    exe.functions.push_back(
        vm::Function{f.name,
                     nargs,
                     std::max<uint32_t>(nargs, 1),
                     {vm::Instruction{vm::Opcode::InvokeKernel, args},
                      vm::Instruction{vm::Opcode::Ret, {static_cast<int64_t>(nargs) - 1}}}});
  }
  return exe;
}

inline std::shared_ptr<const vm::Program> load_program(const vm::KernelLibrary& lib,
                                                       const std::vector<tir::LoweredFunc>& funcs) {
  return vm::Program::load(executable_for(lib, funcs));
}

// Runs kernel `name` through the bytecode function of the same name.
inline void call(vm::VirtualMachine& vm, const std::string& name, std::vector<vm::Value> args) {
  int64_t f = vm.program().exe().find_function(name);
  if (f < 0) throw std::runtime_error("no function " + name);
  vm.invoke(static_cast<size_t>(f), args);
}

template <typename T>
vm::Tensor tensor(const std::vector<T>& values, vm::DType dtype, vm::Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  return vm::Tensor::from_vector(values, std::move(shape), dtype);
}

// An output tensor whose every byte is 0xA5: an element the kernel does not write is a
// NaN-ish float or an unlikely integer, and the value checks catch it.
inline vm::Tensor poisoned(vm::Shape shape, vm::DType dtype) {
  vm::Tensor t = vm::Tensor::empty(std::move(shape), dtype);
  std::memset(t.data(), 0xa5, t.nbytes());
  return t;
}

template <typename T>
std::vector<T> values(const vm::Tensor& t) {
  const T* p = t.data_as<T>();
  return std::vector<T>(p, p + t.numel());
}

}  // namespace dynvm::codegen::testing
