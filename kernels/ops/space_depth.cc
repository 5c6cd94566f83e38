// DepthToSpace and SpaceToDepth (see space_depth.h): output indices split into block and
// position by floordiv / floormod, the input channel recombined from them.
#include "kernels/ops/space_depth.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

void check_input(const char* op, const TensorType& x, int64_t blocksize) {
  if (x.shape.size() != 4) user_error(op, ": the input must be 4-D (N x C x H x W)");
  if (blocksize < 1) user_error(op, ": blocksize must be positive, got ", blocksize);
}

// d / b for a dim that must divide: a constant is checked.
arith::Expr divided(const char* op, const char* what, const arith::Expr& d, int64_t b) {
  if (d.is_int_imm() && d.int_value() % b != 0) {
    user_error(op, ": ", what, " ", d.int_value(), " is not divisible by ", b);
  }
  return d.is_int_imm() ? arith::make_int(d.int_value() / b) : arith::floordiv(d, b);
}

}  // namespace

OpInstance depth_to_space(const TensorType& x, int64_t b, DepthToSpaceMode mode) {
  check_input("depth_to_space", x, b);
  const arith::Expr channels = divided("depth_to_space", "channels", x.shape[1], b * b);
  std::vector<arith::Expr> shape = {x.shape[0], channels, x.shape[2] * arith::Expr(b),
                                    x.shape[3] * arith::Expr(b)};
  if (x.shape[2].is_int_imm()) shape[2] = arith::make_int(x.shape[2].int_value() * b);
  if (x.shape[3].is_int_imm()) shape[3] = arith::make_int(x.shape[3].int_value() * b);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& o) {
    arith::Expr i = arith::floormod(o[2], b), j = arith::floormod(o[3], b);
    arith::Expr block = i * arith::Expr(b) + j;
    arith::Expr c = mode == DepthToSpaceMode::kDCR ? block * channels + arith::Expr(o[1])
                                                   : arith::Expr(o[1]) * arith::Expr(b * b) + block;
    return te::read(in, {o[0], c, arith::floordiv(o[2], b), arith::floordiv(o[3], b)});
  });
  const char* tag = mode == DepthToSpaceMode::kDCR ? "dcr_" : "crd_";
  return injective_op("depth_to_space_" + std::string(tag) + dtype_suffix(x.dtype), {in}, out);
}

OpInstance space_to_depth(const TensorType& x, int64_t b) {
  check_input("space_to_depth", x, b);
  const arith::Expr& channels = x.shape[1];
  std::vector<arith::Expr> shape = {x.shape[0], channels * arith::Expr(b * b),
                                    divided("space_to_depth", "height", x.shape[2], b),
                                    divided("space_to_depth", "width", x.shape[3], b)};
  if (channels.is_int_imm()) shape[1] = arith::make_int(channels.int_value() * b * b);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& o) {
    arith::Expr c = arith::floormod(o[1], channels), block = arith::floordiv(o[1], channels);
    arith::Expr i = arith::floordiv(block, b), j = arith::floormod(block, b);
    return te::read(in, {o[0], c, arith::Expr(o[2]) * arith::Expr(b) + i,
                         arith::Expr(o[3]) * arith::Expr(b) + j});
  });
  return injective_op("space_to_depth_" + dtype_suffix(x.dtype), {in}, out);
}

}  // namespace dynvm::ops
