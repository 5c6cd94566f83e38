// Type relations of the sequence and optional ops (see ops_sequence.h). Elements read out of
// a sequence have Any where their dims are not constants; type inference then reads those
// dims from the element at run time (run-time symbols, docs/compiler.md).
#include "compiler/op/ops_sequence.h"

#include <set>

#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

ValueFacts of_type(Type t) { return ValueFacts{std::move(t), std::nullopt, {}}; }

const Type& sequence(const OpContext& ctx, size_t i) {
  const Type& t = ctx.input(i).type;
  if (!t.is_sequence()) ctx.fail("input ", i, " must be a sequence, got ", to_string(t));
  return t;
}

// The sequence `seq` with one more element of type `elem`.
Type with_element(const OpContext& ctx, const Type& seq, const TypeNode& elem) {
  if (elem.dtype != seq->dtype) {
    ctx.fail("a ", vm::dtype_name(elem.dtype), " tensor cannot join a sequence of ",
             vm::dtype_name(seq->dtype));
  }
  Type e = tensor_type(elem.dtype, elem.dims);
  if (seq->no_elements) return sequence_type(seq->dtype, e);
  const Type* old = element_type(seq);
  return sequence_type(seq->dtype, old == nullptr ? Type() : join_elements(*old, e));
}

// A position operand: an i64 or i32 scalar (or one-element tensor).
void check_position(const OpContext& ctx, size_t i) {
  const TypeNode& t = ctx.tensor(i);
  if (t.dtype != vm::DType::kInt64 && t.dtype != vm::DType::kInt32) {
    ctx.fail("the position must be i64 or i32, got ", vm::dtype_name(t.dtype));
  }
  if (t.dims.size() > 1 ||
      (t.dims.size() == 1 && !(t.dims[0].is_const() && t.dims[0].value() == 1)))
    ctx.fail("the position must be a scalar");
}

Facts sequence_construct(OpContext& ctx) {
  const TypeNode& first = ctx.tensor(0);
  Type seq = sequence_type(first.dtype, tensor_type(first.dtype, first.dims));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) seq = with_element(ctx, seq, ctx.tensor(i));
  return {of_type(seq)};
}

Facts sequence_empty(OpContext& ctx) {
  const int64_t code = ctx.attr_int("dtype", 1);  // ONNX: float by default
  std::optional<vm::DType> dtype = vm::from_onnx_code(static_cast<int>(code));
  if (!dtype) ctx.fail("unsupported dtype ", code);
  return {of_type(empty_sequence_type(*dtype))};
}

Facts sequence_length(OpContext& ctx) {
  sequence(ctx, 0);
  return {tensor_facts(vm::DType::kInt64, {})};
}

Facts sequence_at(OpContext& ctx) {
  const Type& seq = sequence(ctx, 0);
  check_position(ctx, 1);
  if (seq->no_elements) ctx.fail("the sequence is empty");
  const Type* elem = element_type(seq);
  if (elem == nullptr) ctx.fail("the rank of the sequence's elements is not known");
  return {of_type(*elem)};
}

Facts sequence_insert(OpContext& ctx) {
  const Type& seq = sequence(ctx, 0);
  if (ctx.has_input(2)) check_position(ctx, 2);
  return {of_type(with_element(ctx, seq, ctx.tensor(1)))};
}

Facts sequence_erase(OpContext& ctx) {
  const Type& seq = sequence(ctx, 0);
  if (ctx.has_input(1)) check_position(ctx, 1);
  return {of_type(seq)};
}

// Optional(x), or the empty Optional of the type the importer wrote as attributes:
// `elem_kind` ("tensor" / "sequence"), `dtype` (an ONNX code) and, when the rank is known,
// `shape` (-1 for a dim that is not a constant).
Facts optional_op(OpContext& ctx) {
  if (ctx.has_input(0)) {
    const Type& t = ctx.input(0).type;
    if (!t.is_tensor() && !t.is_sequence()) ctx.fail("cannot hold ", to_string(t));
    return {of_type(optional_type(t))};
  }
  const std::string kind = ctx.attr_string("elem_kind", "");
  std::optional<vm::DType> dtype = vm::from_onnx_code(static_cast<int>(ctx.attr_int("dtype", 0)));
  if ((kind != "tensor" && kind != "sequence") || !dtype) {
    ctx.fail("an Optional without input needs its type (a tensor or sequence type)");
  }
  Type elem;
  if (ctx.attrs().count("shape")) {
    std::vector<Dim> dims;
    for (int64_t d : ctx.attr_ints("shape", {})) dims.push_back(d < 0 ? Dim::any() : Dim(d));
    elem = tensor_type(*dtype, dims);
  }
  if (kind == "sequence") return {of_type(optional_type(sequence_type(*dtype, elem)))};
  if (!elem.defined()) ctx.fail("an empty optional tensor needs its rank");
  return {of_type(optional_type(elem))};
}

// A value that is not an optional is present (ONNX, opset 18); an absent input is not.
Facts optional_has_element(OpContext& ctx) {
  std::optional<std::vector<Dim>> value;
  if (!ctx.has_input(0)) {
    value = std::vector<Dim>{Dim(0)};
  } else if (!ctx.input(0).type.is_optional()) {
    value = std::vector<Dim>{Dim(1)};
  }
  return {tensor_facts(vm::DType::kBool, {}, value)};
}

Facts optional_get_element(OpContext& ctx) {
  const ValueFacts& in = ctx.input(0);
  if (!in.type.is_optional()) return {in};
  return {of_type(in.type->fields[0])};
}

}  // namespace

bool is_container_op(const std::string& op) {
  static const std::set<std::string> kOps = {
      "SequenceConstruct", "SequenceEmpty",      "SequenceLength",
      "SequenceAt",        "SequenceInsert",     "SequenceErase",
      "Optional",          "OptionalHasElement", "OptionalGetElement"};
  return kOps.count(op) != 0;
}

Type join_elements(const Type& a, const Type& b) {
  if (!a.defined() || !b.defined() || a->dims.size() != b->dims.size()) return {};
  std::vector<Dim> dims;
  for (size_t k = 0; k < a->dims.size(); ++k) {
    dims.push_back(a->dims[k].same_as(b->dims[k]) ? a->dims[k] : Dim::any());
  }
  return tensor_type(a->dtype, dims);
}

void register_sequence_ops() {
  constexpr size_t kMany = 1 << 20;
  register_op({"SequenceConstruct", ShapeRule::kFromInputDims, 1, kMany, sequence_construct});
  register_op({"SequenceEmpty", ShapeRule::kFromInputDims, 0, 0, sequence_empty});
  register_op({"SequenceLength", ShapeRule::kFromInputDims, 1, 1, sequence_length});
  register_op({"SequenceAt", ShapeRule::kFromInputDims, 2, 2, sequence_at});
  register_op({"SequenceInsert", ShapeRule::kFromInputDims, 2, 3, sequence_insert});
  register_op({"SequenceErase", ShapeRule::kFromInputDims, 1, 2, sequence_erase});
  register_op({"Optional", ShapeRule::kFromInputDims, 0, 1, optional_op});
  register_op({"OptionalHasElement", ShapeRule::kFromInputDims, 0, 1, optional_has_element});
  register_op({"OptionalGetElement", ShapeRule::kFromInputDims, 1, 1, optional_get_element});
}

}  // namespace dynvm::compiler
