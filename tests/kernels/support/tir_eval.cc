// The reference TIR interpreter (see tir_eval.h). Values are vectors of lanes held as double
// (float types) or int64 (integers, bool); every result is rounded to its element type the
// way the element type would round it, so f32 math behaves like float and i32 wraps.
#include "tests/kernels/support/tir_eval.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "kernels/arith/evaluate.h"
#include "kernels/arith/int_math.h"
#include "kernels/arith/printer.h"
#include "kernels/tir/printer.h"
#include "vm/error.h"

namespace dynvm::tir::testing {
namespace {

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw EvalError(str_cat(std::forward<Args>(args)...));
}

// ---- element conversions ----

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | static_cast<uint32_t>(exp + 112) << 23 | (mant << 13));
}

uint16_t float_to_half(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {          // subnormal: multiples of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t mant = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));  // 11 bits
  if (mant == 2048) {
    mant = 1024;
    ++e;
  }
  return sign | static_cast<uint16_t>((e + 14) << 10) | static_cast<uint16_t>(mant - 1024);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

double round_float(vm::DType t, double v) {
  switch (t) {
    case vm::DType::kFloat32:
      return static_cast<float>(v);
    case vm::DType::kFloat16:
      return half_to_float(float_to_half(static_cast<float>(v)));
    case vm::DType::kBFloat16:
      return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    default:
      return v;
  }
}

int64_t wrap_int(vm::DType t, int64_t v) {
  switch (t) {
    case vm::DType::kInt8:
      return static_cast<int8_t>(v);
    case vm::DType::kInt16:
      return static_cast<int16_t>(v);
    case vm::DType::kInt32:
      return static_cast<int32_t>(v);
    case vm::DType::kUInt8:
      return static_cast<uint8_t>(v);
    case vm::DType::kUInt16:
      return static_cast<uint16_t>(v);
    case vm::DType::kUInt32:
      return static_cast<uint32_t>(v);
    case vm::DType::kBool:
      return v != 0;
    default:
      return v;
  }
}

int64_t float_to_int(vm::DType t, double v) {
  if (std::isnan(v)) fail("conversion of NaN to ", vm::dtype_name(t));
  double tr = std::trunc(v);
  if (std::fabs(tr) >= 9.2e18) fail("conversion of ", v, " to ", vm::dtype_name(t));
  return wrap_int(t, static_cast<int64_t>(tr));
}

// ---- values ----

struct Value {
  DataType type;
  std::vector<double> f;   // float types
  std::vector<int64_t> i;  // integers and bool

  bool is_float() const { return type.is_float(); }
  int lanes() const { return type.lanes; }
  double as_double(int l) const { return is_float() ? f[l] : static_cast<double>(i[l]); }
  static Value make(DataType t) {
    Value v{t, {}, {}};
    if (t.is_float()) {
      v.f.resize(t.lanes);
    } else {
      v.i.resize(t.lanes);
    }
    return v;
  }
};

// ---- memory ----

struct Memory {
  char* data = nullptr;
  int64_t numel = 0;
  vm::DType dtype = vm::DType::kFloat32;
  std::vector<int64_t> shape;
  std::shared_ptr<std::vector<char>> owned;  // allocated buffers
};

void load_elem(const Memory& m, int64_t idx, Value& out, int lane) {
  const char* p = m.data + idx * static_cast<int64_t>(vm::dtype_size(m.dtype));
  auto get = [&](auto tag) {
    decltype(tag) x;
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (m.dtype) {
    case vm::DType::kFloat32:
      out.f[lane] = get(float{});
      return;
    case vm::DType::kFloat64:
      out.f[lane] = get(double{});
      return;
    case vm::DType::kFloat16:
      out.f[lane] = half_to_float(get(uint16_t{}));
      return;
    case vm::DType::kBFloat16:
      out.f[lane] = bf16_to_float(get(uint16_t{}));
      return;
    case vm::DType::kInt8:
      out.i[lane] = get(int8_t{});
      return;
    case vm::DType::kInt16:
      out.i[lane] = get(int16_t{});
      return;
    case vm::DType::kInt32:
      out.i[lane] = get(int32_t{});
      return;
    case vm::DType::kInt64:
      out.i[lane] = get(int64_t{});
      return;
    case vm::DType::kUInt8:
      out.i[lane] = get(uint8_t{});
      return;
    case vm::DType::kUInt16:
      out.i[lane] = get(uint16_t{});
      return;
    case vm::DType::kUInt32:
      out.i[lane] = get(uint32_t{});
      return;
    case vm::DType::kUInt64:
      out.i[lane] = static_cast<int64_t>(get(uint64_t{}));
      return;
    case vm::DType::kBool:
      out.i[lane] = get(uint8_t{}) != 0;
      return;
    default:
      fail("unsupported element type ", vm::dtype_name(m.dtype));
  }
}

void store_elem(const Memory& m, int64_t idx, const Value& v, int lane) {
  char* p = m.data + idx * static_cast<int64_t>(vm::dtype_size(m.dtype));
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (m.dtype) {
    case vm::DType::kFloat32:
      put(static_cast<float>(v.f[lane]));
      return;
    case vm::DType::kFloat64:
      put(v.f[lane]);
      return;
    case vm::DType::kFloat16:
      put(float_to_half(static_cast<float>(v.f[lane])));
      return;
    case vm::DType::kBFloat16:
      put(float_to_bf16(static_cast<float>(v.f[lane])));
      return;
    case vm::DType::kInt8:
      put(static_cast<int8_t>(v.i[lane]));
      return;
    case vm::DType::kInt16:
      put(static_cast<int16_t>(v.i[lane]));
      return;
    case vm::DType::kInt32:
      put(static_cast<int32_t>(v.i[lane]));
      return;
    case vm::DType::kInt64:
      put(v.i[lane]);
      return;
    case vm::DType::kUInt8:
      put(static_cast<uint8_t>(v.i[lane]));
      return;
    case vm::DType::kUInt16:
      put(static_cast<uint16_t>(v.i[lane]));
      return;
    case vm::DType::kUInt32:
      put(static_cast<uint32_t>(v.i[lane]));
      return;
    case vm::DType::kUInt64:
      put(static_cast<uint64_t>(v.i[lane]));
      return;
    case vm::DType::kBool:
      put(static_cast<uint8_t>(v.i[lane] != 0));
      return;
    default:
      fail("unsupported element type ", vm::dtype_name(m.dtype));
  }
}

// ---- arithmetic ----

int64_t checked(std::optional<int64_t> r, const char* what) {
  if (!r) fail("integer ", what, " overflows or divides by zero");
  return *r;
}

double float_binary(BinaryOp op, vm::DType t, double x, double y) {
  bool f32 = t != vm::DType::kFloat64;
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
    case BinaryOp::kMod:
      return x - std::floor(x / y) * y;
    case BinaryOp::kMin:
      return std::fmin(x, y);
    case BinaryOp::kMax:
      return std::fmax(x, y);
    case BinaryOp::kPow:
      return f32 ? std::pow(static_cast<float>(x), static_cast<float>(y)) : std::pow(x, y);
  }
  return 0;
}

int64_t int_binary(BinaryOp op, int64_t x, int64_t y) {
  switch (op) {
    case BinaryOp::kAdd:
      return checked(arith::checked_add(x, y), "add");
    case BinaryOp::kSub:
      return checked(arith::checked_sub(x, y), "sub");
    case BinaryOp::kMul:
      return checked(arith::checked_mul(x, y), "mul");
    case BinaryOp::kDiv:
      return checked(arith::checked_floordiv(x, y), "div");
    case BinaryOp::kMod:
      return checked(arith::checked_floormod(x, y), "mod");
    case BinaryOp::kMin:
      return std::min(x, y);
    case BinaryOp::kMax:
      return std::max(x, y);
    case BinaryOp::kPow: {
      if (y < 0) return x == 1 ? 1 : (x == -1 ? (y % 2 ? -1 : 1) : 0);
      int64_t r = 1;
      for (int64_t k = 0; k < y; ++k) r = checked(arith::checked_mul(r, x), "pow");
      return r;
    }
  }
  return 0;
}

template <typename T>
bool compare_values(CompareOp op, T x, T y) {
  switch (op) {
    case CompareOp::kEq:
      return x == y;
    case CompareOp::kNe:
      return x != y;
    case CompareOp::kLt:
      return x < y;
    case CompareOp::kLe:
      return x <= y;
    case CompareOp::kGt:
      return x > y;
    case CompareOp::kGe:
      return x >= y;
  }
  return false;
}

template <typename T>
T intrinsic(Intrinsic fn, T x) {
  switch (fn) {
    case Intrinsic::kExp:
      return std::exp(x);
    case Intrinsic::kLog:
      return std::log(x);
    case Intrinsic::kTanh:
      return std::tanh(x);
    case Intrinsic::kErf:
      return std::erf(x);
    case Intrinsic::kSigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case Intrinsic::kSqrt:
      return std::sqrt(x);
    case Intrinsic::kRsqrt:
      return T(1) / std::sqrt(x);
    case Intrinsic::kAbs:
      return std::fabs(x);
    case Intrinsic::kNeg:
      return -x;
    case Intrinsic::kFloor:
      return std::floor(x);
    case Intrinsic::kCeil:
      return std::ceil(x);
    case Intrinsic::kRound:
      return std::nearbyint(x);
    case Intrinsic::kSin:
      return std::sin(x);
    case Intrinsic::kCos:
      return std::cos(x);
    case Intrinsic::kLog1p:
      return std::log1p(x);
    case Intrinsic::kExpm1:
      return std::expm1(x);
    case Intrinsic::kIsNan:
      return std::isnan(x) ? 1 : 0;
    case Intrinsic::kIsInf:
      return std::isinf(x) ? 1 : 0;
    case Intrinsic::kSign:
      return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
    case Intrinsic::kReciprocal:
      return T(1) / x;
    case Intrinsic::kAtan:
      return std::atan(x);
  }
  return x;
}

// ---- the interpreter ----

class Interpreter {
 public:
  using BufferMap = std::unordered_map<const Buffer*, Memory>;

  Interpreter(const LoweredFunc* lowered, BufferMap buffers, arith::VarValues vars)
      : lowered_(lowered), buffers_(std::move(buffers)), vars_(std::move(vars)) {}

  void stmt(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kFor: {
        int64_t min = index(s->min);
        int64_t extent = index(s->extent);
        arith::VarId id = s->loop_var->var_id;
        for (int64_t k = 0; k < extent; ++k) {
          vars_[id] = min + k;
          stmt(s->body);
        }
        vars_.erase(id);
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : s->seq) stmt(c);
        break;
      case StmtKind::kIf:
        if (index(s->condition)) {
          stmt(s->then_case);
        } else if (s->else_case.defined()) {
          stmt(s->else_case);
        }
        break;
      case StmtKind::kStore: {
        Value v = expr(s->value);
        const Memory& m = memory(s->buffer);
        const int64_t active = s->active.defined() ? index(s->active) : v.lanes();
        for (int l = 0; l < v.lanes() && l < active; ++l) {
          store_elem(m, flat_index(*s->buffer, m, s->indices, s->stride, l), v, l);
        }
        break;
      }
      case StmtKind::kAllocate: {
        Memory m;
        m.dtype = s->buffer->dtype();
        m.numel = 1;
        for (const auto& d : s->buffer->shape()) {
          m.shape.push_back(index(d));
          m.numel *= m.shape.back();
        }
        if (m.numel < 0) fail("allocation of ", s->buffer->name(), " with negative size");
        m.owned = std::make_shared<std::vector<char>>(
            static_cast<size_t>(m.numel) * vm::dtype_size(m.dtype) + 1, char(0x7f));
        m.data = m.owned->data();  // 0x7f bytes: NaN for floats, huge for ints
        buffers_[s->buffer.get()] = m;
        stmt(s->body);
        buffers_.erase(s->buffer.get());
        break;
      }
      case StmtKind::kLetIndex: {
        Value v = expr(s->value);
        arith::VarId id = s->let_var->var_id;
        vars_[id] = v.i[0];
        stmt(s->body);
        vars_.erase(id);
        break;
      }
      case StmtKind::kParallelCall:
        parallel_call(s);
        break;
      case StmtKind::kNop:
        break;
    }
  }

 private:
  int64_t index(const arith::Expr& e) {
    try {
      return arith::evaluate(e, vars_);
    } catch (const Error& err) {
      fail("evaluating ", arith::to_string(e), ": ", err.what());
    }
  }

  const Memory& memory(const BufferRef& b) {
    auto it = buffers_.find(b.get());
    if (it == buffers_.end()) fail("buffer ", b->name(), " is not available here");
    return it->second;
  }

  int64_t flat_index(const Buffer& b, const Memory& m, const std::vector<arith::Expr>& indices,
                     const arith::Expr& stride, int lane) {
    int64_t flat = 0;
    if (indices.size() == 1) {
      flat = index(indices[0]);
      if (stride.defined()) flat += lane * index(stride);
    } else {
      if (indices.size() != m.shape.size()) fail("wrong index count for ", b.name());
      for (size_t d = 0; d < indices.size(); ++d) {
        int64_t i = index(indices[d]);
        if (i < 0 || i >= m.shape[d]) {
          fail("index ", i, " out of bounds for dim ", d, " (", m.shape[d], ") of ", b.name());
        }
        flat = flat * m.shape[d] + i;
      }
    }
    if (flat < 0 || flat >= m.numel) {
      fail("flat index ", flat, " out of bounds for ", b.name(), " (", m.numel, " elements)");
    }
    return flat;
  }

  void parallel_call(const Stmt& s) {
    if (lowered_ == nullptr || s->region >= lowered_->regions.size()) {
      fail("parallel_call to a missing region");
    }
    const ParallelRegion& r = lowered_->regions[s->region];
    int64_t extent = index(s->extent);
    arith::VarValues vars;
    for (const auto& v : r.captured_vars) {
      auto it = vars_.find(v->var_id);
      if (it == vars_.end()) fail("region ", r.name, " captures unbound ", v->name);
      vars[v->var_id] = it->second;
    }
    BufferMap buffers;
    for (const BufferRef& b : r.captured_buffers) buffers[b.get()] = memory(b);
    Interpreter inner(lowered_, std::move(buffers), std::move(vars));
    for (int64_t k = 0; k < extent; ++k) {
      inner.vars_[r.loop_var->var_id] = k;
      inner.stmt(r.body);
    }
  }

  Value expr(const Expr& e) {
    DataType t = e.type();
    Value out = Value::make(t);
    const auto& ops = e->operands;
    switch (e.kind()) {
      case ExprKind::kConst:
        if (out.is_float()) {
          out.f[0] = e->fvalue;
        } else {
          out.i[0] = e->ivalue;
        }
        return out;
      case ExprKind::kIndexValue: {
        int64_t base = index(e->index);
        int64_t stride = e->stride.defined() ? index(e->stride) : 0;
        for (int l = 0; l < t.lanes; ++l) {
          int64_t v = base + l * stride;
          if (out.is_float()) {
            out.f[l] = round_float(t.elem, static_cast<double>(v));
          } else {
            out.i[l] = wrap_int(t.elem, v);
          }
        }
        return out;
      }
      case ExprKind::kBufferLoad: {
        const Memory& m = memory(e->buffer);
        // Inactive lanes of a masked load read nothing (and stay 0).
        const int64_t active = e->active.defined() ? index(e->active) : t.lanes;
        for (int l = 0; l < t.lanes && l < active; ++l) {
          load_elem(m, flat_index(*e->buffer, m, e->indices, e->stride, l), out, l);
        }
        return out;
      }
      case ExprKind::kBinary: {
        Value a = expr(ops[0]), b = expr(ops[1]);
        for (int l = 0; l < t.lanes; ++l) {
          if (out.is_float()) {
            out.f[l] = round_float(t.elem, float_binary(e->binary_op, t.elem, a.f[l], b.f[l]));
          } else {
            out.i[l] = wrap_int(t.elem, int_binary(e->binary_op, a.i[l], b.i[l]));
          }
        }
        return out;
      }
      case ExprKind::kCompare: {
        Value a = expr(ops[0]), b = expr(ops[1]);
        for (int l = 0; l < t.lanes; ++l) {
          out.i[l] = a.is_float() ? compare_values(e->compare_op, a.f[l], b.f[l])
                                  : compare_values(e->compare_op, a.i[l], b.i[l]);
        }
        return out;
      }
      case ExprKind::kLogical: {
        Value a = expr(ops[0]);
        if (e->logical_op == LogicalOp::kNot) {
          for (int l = 0; l < t.lanes; ++l) out.i[l] = !a.i[l];
          return out;
        }
        Value b = expr(ops[1]);
        for (int l = 0; l < t.lanes; ++l) {
          out.i[l] = e->logical_op == LogicalOp::kAnd ? (a.i[l] && b.i[l]) : (a.i[l] || b.i[l]);
        }
        return out;
      }
      case ExprKind::kCall: {
        Value a = expr(ops[0]);
        for (int l = 0; l < t.lanes; ++l) {
          if (!a.is_float()) {
            double r = intrinsic(e->intrinsic, static_cast<double>(a.i[l]));
            out.i[l] = wrap_int(t.elem, static_cast<int64_t>(r));
          } else if (ops[0].type().elem == vm::DType::kFloat64) {
            double r = intrinsic(e->intrinsic, a.f[l]);
            if (out.is_float())
              out.f[l] = r;
            else
              out.i[l] = r != 0;
          } else {
            float r = intrinsic(e->intrinsic, static_cast<float>(a.f[l]));
            if (out.is_float()) {
              out.f[l] = round_float(t.elem, r);
            } else {
              out.i[l] = r != 0;
            }
          }
        }
        return out;
      }
      case ExprKind::kCast: {
        Value a = expr(ops[0]);
        for (int l = 0; l < t.lanes; ++l) {
          if (t.is_bool()) {
            out.i[l] = a.as_double(l) != 0;
          } else if (out.is_float()) {
            out.f[l] = round_float(t.elem, a.as_double(l));
          } else if (a.is_float()) {
            out.i[l] = float_to_int(t.elem, a.f[l]);
          } else {
            out.i[l] = wrap_int(t.elem, a.i[l]);
          }
        }
        return out;
      }
      case ExprKind::kSelect: {
        Value c = expr(ops[0]), a = expr(ops[1]), b = expr(ops[2]);
        for (int l = 0; l < t.lanes; ++l) {
          bool take_a = c.i[c.lanes() == 1 ? 0 : l] != 0;
          const Value& src = take_a ? a : b;
          if (out.is_float()) {
            out.f[l] = src.f[l];
          } else {
            out.i[l] = src.i[l];
          }
        }
        return out;
      }
      case ExprKind::kBroadcast: {
        Value a = expr(ops[0]);
        for (int l = 0; l < t.lanes; ++l) {
          if (out.is_float()) {
            out.f[l] = a.f[0];
          } else {
            out.i[l] = a.i[0];
          }
        }
        return out;
      }
      case ExprKind::kLetIndex: {
        Value v = expr(ops[0]);
        arith::VarId id = e->let_var->var_id;
        vars_[id] = v.i[0];
        Value r = expr(ops[1]);
        vars_.erase(id);
        return r;
      }
      case ExprKind::kTensorRead:
      case ExprKind::kReduce:
        fail("TE-only node in TIR: ", to_string(e));
    }
    fail("unknown expression kind");
  }

  const LoweredFunc* lowered_;
  BufferMap buffers_;
  arith::VarValues vars_;
};

void run(const PrimFunc& f, const LoweredFunc* lowered, const std::vector<vm::Tensor>& args) {
  if (args.size() != f.params.size()) {
    fail(f.name, " takes ", f.params.size(), " arguments, got ", args.size());
  }
  Interpreter::BufferMap buffers;
  arith::VarValues vars;
  for (size_t p = 0; p < args.size(); ++p) {
    const Buffer& b = *f.params[p];
    const vm::Tensor& t = args[p];
    if (t.dtype() != b.dtype())
      fail("argument ", b.name(), " has dtype ", vm::dtype_name(t.dtype()));
    if (t.ndim() != static_cast<int64_t>(b.shape().size())) {
      fail("argument ", b.name(), " has rank ", t.ndim());
    }
    for (size_t d = 0; d < b.shape().size(); ++d) {
      const arith::Expr& dim = b.shape()[d];
      if (dim.kind() == arith::ExprKind::kVar && !vars.count(dim->var_id)) {
        vars[dim->var_id] = t.dim(static_cast<int64_t>(d));
      }
    }
    buffers[&b] = Memory{static_cast<char*>(t.data()), t.numel(), t.dtype(), t.shape(), {}};
  }
  for (size_t p = 0; p < args.size(); ++p) {
    const Buffer& b = *f.params[p];
    for (size_t d = 0; d < b.shape().size(); ++d) {
      int64_t want = arith::evaluate(b.shape()[d], vars);
      if (want != args[p].dim(static_cast<int64_t>(d))) {
        fail("argument ", b.name(), " dim ", d, " is ", args[p].dim(static_cast<int64_t>(d)),
             ", the function's dims say ", want);
      }
    }
  }
  Interpreter interp(lowered, std::move(buffers), std::move(vars));
  interp.stmt(f.body);
}

}  // namespace

void evaluate(const PrimFunc& f, const std::vector<vm::Tensor>& args) { run(f, nullptr, args); }

void evaluate(const LoweredFunc& f, const std::vector<vm::Tensor>& args) { run(f.func, &f, args); }

}  // namespace dynvm::tir::testing
