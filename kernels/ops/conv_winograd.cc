// Winograd convolutions over channel-blocked tensors (see conv_winograd.h).
#include "kernels/ops/conv_winograd.h"

#include <functional>
#include <string>

#include "kernels/arith/simplify.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;
using tir::Expr;

arith::Expr I(int64_t v) { return arith::make_int(v); }

// The product's widest register tile (tiles).
constexpr int64_t kMaxTileBlock = 8;
// Transformed weights and a chunk's V and M up to this size stay in L2 while the chunk
// streams the weights: V and M are then computed per chunk (chunk_tiles), in cache and in
// bounded memory.
constexpr int64_t kChunkedWeightBytes = 1 << 20;
// Tiles per chunk: one tile block of each tile_block candidate (4, 8 when chunked), so that a
// short last chunk computes at most 7 tiles it does not need. Chunks of 24-96 tiles ran as
// fast at one thread and wasted up to 20 of 196 tiles at 56x56 (15% slower at two threads
// where a 28x28 map's 49 tiles made 3 chunks).
constexpr int64_t kChunkTiles = 8;

// Tiles per chunk for a conv of these blocks, or 0: V and M at the root, over all tiles, U
// streamed once (weights beyond L2 would be streamed again per chunk).
int64_t chunk_tiles(int64_t alpha, int64_t in_blocks, int64_t group_blocks, int64_t out_blocks) {
  const int64_t vector_bytes = kChannelBlock * 4;
  const int64_t u_bytes = alpha * alpha * out_blocks * group_blocks * kChannelBlock * vector_bytes;
  const int64_t tile_bytes = alpha * alpha * (in_blocks + out_blocks) * vector_bytes;
  return u_bytes + kChunkTiles * tile_bytes > kChunkedWeightBytes ? 0 : kChunkTiles;
}

// sum over k of row[k] * term(k), the zero coefficients dropped and +-1 not multiplied.
Expr combination(const double* row, int64_t n, const std::function<Expr(int64_t)>& term) {
  Expr acc;
  for (int64_t k = 0; k < n; ++k) {
    const double c = row[k];
    if (c == 0.0) continue;
    Expr t = term(k);
    const bool unit = c == 1.0 || c == -1.0;
    if (!acc.defined()) {
      acc = c == 1.0 ? t : t * tir::make_const(t.type(), c);
    } else if (unit) {
      acc = c > 0 ? acc + t : acc - t;
    } else {
      acc =
          c > 0 ? acc + t * tir::make_const(t.type(), c) : acc - t * tir::make_const(t.type(), -c);
    }
  }
  return acc;
}

// row(index) for a loop index in [0, n): a select per value, resolved once the loop over
// `index` is unrolled (tir::select folds a constant condition).
Expr choose(const arith::Expr& index, int64_t n, const std::function<Expr(int64_t)>& row) {
  Expr v = row(n - 1);
  for (int64_t k = n - 2; k >= 0; --k) {
    v = tir::select(tir::index_value(arith::eq(index, I(k)), tir::boolean()), row(k), v);
  }
  return v;
}

}  // namespace

const WinogradMatrices& winograd_matrices(int64_t m) {
  // F(2, 3): points 0, 1, -1 and infinity; F(4, 3): 0, 1, -1, 2, -2 and infinity, the
  // choice that keeps fp32 rounding in the transforms small (Lavin and Gray).
  static const WinogradMatrices f2{2,
                                   4,
                                   {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                                   {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
                                   {1, 1, 1, 0, 0, 1, -1, -1}};
  static const WinogradMatrices f4{
      4,
      6,
      {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
       0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1},
      {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 24, 1.0 / 12,
       1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1},
      {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1}};
  if (m == 2) return f2;
  if (m == 4) return f4;
  user_error("conv_winograd: the output tile must be 2 or 4, got ", m);
}

std::vector<float> winograd_weights(const float* w, int64_t out_channels, int64_t in_channels,
                                    int64_t m) {
  const WinogradMatrices& f = winograd_matrices(m);
  const int64_t a = f.alpha, blocks = channel_blocks(out_channels);
  std::vector<float> u(static_cast<size_t>(a * a * blocks * in_channels * kChannelBlock), 0.0f);
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const float* g = w + (o * in_channels + c) * 9;
      double gg[6][3];  // G g
      for (int64_t e = 0; e < a; ++e) {
        for (int64_t s = 0; s < 3; ++s) {
          gg[e][s] = 0;
          for (int64_t r = 0; r < 3; ++r) gg[e][s] += f.g[e * 3 + r] * g[r * 3 + s];
        }
      }
      for (int64_t e = 0; e < a; ++e) {
        for (int64_t n = 0; n < a; ++n) {
          double v = 0;
          for (int64_t s = 0; s < 3; ++s) v += gg[e][s] * f.g[n * 3 + s];
          const int64_t at =
              (((e * a + n) * blocks + o / kChannelBlock) * in_channels + c) * kChannelBlock +
              o % kChannelBlock;
          u[static_cast<size_t>(at)] = static_cast<float>(v);
        }
      }
    }
  }
  return u;
}

OpInstance conv_winograd(const TensorType& xt, const TensorType& ut,
                         const std::optional<TensorType>& bias, const BlockedConvAttrs& a,
                         const FusedEpilogue* e) {
  const char* op_name = "conv_winograd";
  const WinogradMatrices& f = winograd_matrices(a.winograd);
  const int64_t m = f.m, alpha = f.alpha;
  const BlockedShape g = blocked_shape(xt, op_name);
  const std::vector<int64_t> ud = constant_dims(ut, 0, op_name, "U's dims");
  const bool unit =
      a.strides == std::vector<int64_t>{1, 1} && a.dilations == std::vector<int64_t>{1, 1};
  if (a.kernel != std::vector<int64_t>{3, 3} || !unit) {
    user_error(op_name, ": a 3x3 kernel with stride 1 and dilation 1 is required");
  }
  // Groups of whole blocks: output block ob reads the input blocks of group
  // ob / (out blocks / groups).
  if (a.groups < 1 || g.blocks % a.groups != 0) {
    user_error(op_name, ": ", a.groups, " groups do not split ", g.blocks, " input blocks");
  }
  const int64_t group_channels = g.blocks / a.groups * kChannelBlock;
  if (ud.size() != 5 || ud[0] != alpha || ud[1] != alpha || ud[3] != group_channels ||
      ud[4] != kChannelBlock || ut.dtype != xt.dtype || ud[2] % a.groups != 0) {
    user_error(op_name, ": U must be [", alpha, ", ", alpha, ", out blocks (a multiple of ",
               a.groups, "), ", group_channels, ", ", kChannelBlock, "] of X's dtype");
  }
  const int64_t out_blocks = ud[2], in_blocks = g.blocks;
  const int64_t group_blocks = group_channels / kChannelBlock;
  check_blocked_bias(bias, xt, out_blocks, op_name);
  TensorRef X = te::placeholder("X", xt.shape, xt.dtype);
  TensorRef U = te::placeholder("U", ut.shape, ut.dtype);
  TensorRef B = bias ? te::placeholder("B", bias->shape, bias->dtype) : nullptr;

  Window win{a.kernel, a.strides, a.pads, a.dilations};
  const arith::Expr oh = window_output_dim(g.h, win, 0), ow = window_output_dim(g.w, win, 1);
  const arith::Expr th = arith::simplify(arith::floordiv(oh + (m - 1), I(m)));
  const arith::Expr tw = arith::simplify(arith::floordiv(ow + (m - 1), I(m)));
  const arith::Expr per_image = arith::simplify(th * tw);
  const arith::Expr tiles = arith::simplify(g.n * per_image);
  // Chunked, V, the product and M run over the tiles rounded up to whole chunks, the tiles
  // past the last reading it: every chunk is a full one.
  const int64_t chunk = chunk_tiles(alpha, g.blocks, group_blocks, out_blocks);
  const arith::Expr padded_tiles =
      chunk == 0 ? tiles : arith::simplify(arith::floordiv(tiles + (chunk - 1), I(chunk)) * chunk);
  const std::vector<arith::Expr> out_shape{g.n, I(out_blocks), oh, ow, I(kChannelBlock)};
  check_output_dims(op_name, out_shape);

  // The input padded, with m - 1 more rows and columns at the end: the last tile's patch
  // reaches TH * m + 2 rows, up to m - 1 past the padded image.
  Window padded = win;
  padded.pads[2] += m - 1;
  padded.pads[3] += m - 1;
  const TensorRef P = pad_spatial(X, padded, 0.0);

  // V = B^T d B, separably: rows (eps, b) = sum over a of bt[eps][a] d[a][b], then V's
  // columns. Tile t's patch starts at row m * ty, column m * tx of image t / (TH * TW).
  const double* bt = f.bt.data();
  TensorRef rows = te::compute(
      "InRows", {I(alpha), I(in_blocks), padded_tiles, I(alpha), I(kChannelBlock)},
      [&](const Indices& i) {
        const arith::Expr t = chunk == 0 ? i[2] : arith::min(i[2], tiles - 1);
        const arith::Expr image = arith::floordiv(t, per_image);
        const arith::Expr in_image = arith::floormod(t, per_image);
        const arith::Expr y0 = arith::floordiv(in_image, tw) * m;
        const arith::Expr x0 = arith::floormod(in_image, tw) * m;
        return choose(i[0], alpha, [&](int64_t eps) {
          return combination(bt + eps * alpha, alpha, [&](int64_t r) {
            return te::read(P, {image, i[1], y0 + r, x0 + i[3], i[4]});
          });
        });
      });
  TensorRef V = te::compute("V", {I(alpha), I(alpha), I(in_blocks), padded_tiles, I(kChannelBlock)},
                            [&](const Indices& i) {
                              return choose(i[1], alpha, [&](int64_t nu) {
                                return combination(bt + nu * alpha, alpha, [&](int64_t c) {
                                  return te::read(rows, {i[0], i[2], i[3], I(c), i[4]});
                                });
                              });
                            });

  // M = U . V per tile position: the sum over the input channels, in a register tile of
  // tile_block tiles x oc_block output blocks. At the root the accumulator reaches
  // kMaxTileBlock - 1 tiles past the last (their reads clamped to it), so that the last tile
  // block is a full one in registers; only the real tiles are stored.
  te::IterVar ib = te::reduce_axis(group_blocks, "ib");
  te::IterVar il = te::reduce_axis(kChannelBlock, "il");
  TensorRef product = te::compute(
      "Product",
      {I(alpha), I(alpha), I(out_blocks),
       chunk == 0 ? arith::simplify(tiles + (kMaxTileBlock - 1)) : padded_tiles, I(kChannelBlock)},
      [&](const Indices& i) {
        const arith::Expr t = chunk == 0 ? arith::min(i[3], tiles - 1) : i[3];
        arith::Expr block = ib.var;
        if (a.groups > 1) {
          block = arith::floordiv(i[2], out_blocks / a.groups) * group_blocks + ib.var;
        }
        return te::sum(te::read(V, {i[0], i[1], block, t, il.var}) *
                           te::read(U, {i[0], i[1], i[2], ib.var * kChannelBlock + il.var, i[4]}),
                       {ib, il});
      });
  TensorRef M =
      te::compute("M", {I(alpha), I(alpha), I(out_blocks), padded_tiles, I(kChannelBlock)},
                  [&](const Indices& i) {
                    return te::read(product, {i[0], i[1], i[2], i[3], i[4]});
                  });

  // Y = A^T M A, separably: (a, j) = sum over b of M[a][b] at[j][b], then Y's rows.
  const double* at = f.at.data();
  TensorRef out_rows = te::compute(
      "OutRows", {I(alpha), I(out_blocks), tiles, I(m), I(kChannelBlock)}, [&](const Indices& i) {
        return choose(i[3], m, [&](int64_t j) {
          return combination(at + j * alpha, alpha, [&](int64_t b) {
            return te::read(M, {i[0], I(b), i[1], i[2], i[4]});
          });
        });
      });
  // The whole m x m tile in registers (Y's tail tiles store part of it).
  TensorRef tile = te::compute("OutTile", {I(out_blocks), tiles, I(m), I(m), I(kChannelBlock)},
                               [&](const Indices& i) {
                                 return choose(i[2], m, [&](int64_t r) {
                                   return combination(at + r * alpha, alpha, [&](int64_t row) {
                                     return te::read(out_rows, {I(row), i[0], i[1], i[3], i[4]});
                                   });
                                 });
                               });
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    const arith::Expr t =
        (i[0] * th + arith::floordiv(i[2], I(m))) * tw + arith::floordiv(i[3], I(m));
    Expr y =
        te::read(tile, {i[1], t, arith::floormod(i[2], I(m)), arith::floormod(i[3], I(m)), i[4]});
    if (B) y = y + te::read(B, {i[1], i[4]});
    return e != nullptr ? e->apply(y, i) : y;
  });

  OpInstance op = blocked_conv_op("conv_winograd" + std::to_string(m), X, U, B, Y, e);
  // At the root (wide convs, whose maps are small: 7x7 is 4 tiles an image) 4 tiles x 4
  // output blocks, so that a short last block computes 4 tiles, not 8.
  const int64_t oc_default = chunk == 0 && out_blocks % 4 == 0 ? 4 : out_blocks % 2 == 0 ? 2 : 1;
  op.knobs = {{"oc_block", {1, 2, 4}, oc_default},
              {"tile_block",
               chunk == 0 ? std::vector<int64_t>{4, 6, kMaxTileBlock}
                          : std::vector<int64_t>{4, kMaxTileBlock},
               chunk == 0 ? 4 : kMaxTileBlock},
              reduction_knobs(out_shape).front()};  // parallel
  op.schedule = [=, specs = op.knobs](const KnobValues& knobs) {
    const int64_t oc_block = knob_value(specs, knobs, "oc_block");
    const int64_t tile_block = knob_value(specs, knobs, "tile_block");
    if (oc_block <= 0 || tile_block <= 0 || tile_block > kMaxTileBlock) {
      user_error(op_name, ": oc_block must be > 0 and tile_block in [1, ", kMaxTileBlock, "]");
    }
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({Y});
    if (P != X) schedule_injective(s, P, kChannelBlock, parallel);

    // Y's loops: per output tile (and block), the tile in registers (below), copied out.
    // Chunked, the tiles flattened over the images run in chunks outermost (in parallel),
    // each computing its V and M first; at the root, V and M are whole stages of their own.
    te::Stage& so = s[Y];
    auto [tho, thi] = so.split(so.axis(2), m);
    auto [two, twi] = so.split(so.axis(3), m);
    te::IterVarRef tile_loop = two;
    te::IterVarRef chunk_loop;
    if (chunk != 0) {
      so.reorder({so.axis(0), tho, two, so.axis(1), thi, twi, so.axis(4)});
      auto [chunks, in_chunk] = so.split(so.fuse(so.fuse(so.axis(0), tho), two), chunk);
      so.reorder({chunks, so.axis(1), in_chunk, thi, twi, so.axis(4)});
      if (parallel) so.parallel(chunks);
      tile_loop = in_chunk;
      chunk_loop = chunks;
    } else {
      so.reorder({so.axis(0), so.axis(1), tho, two, thi, twi, so.axis(4)});
      if (parallel && out_blocks >= kManyChannelBlocks) {
        so.parallel(so.fuse(so.axis(0), so.axis(1)));
      } else if (parallel) {
        so.reorder({tho, so.axis(0), so.axis(1)});
        so.parallel(tho);
      }
    }
    so.vectorize(so.axis(4));
    const bool root_parallel = parallel && chunk == 0;

    // The product: per (position, output block group), tiles of tile_block (at the root,
    // those pairs in parallel).
    te::Stage& sm = s[M];
    if (chunk != 0) sm.compute_at(so, chunk_loop);
    auto [obo, obi] = sm.split(sm.axis(2), oc_block);
    auto [to, ti] = sm.split(sm.axis(3), tile_block);
    te::IterVarRef position = sm.fuse(sm.axis(0), sm.axis(1));
    sm.reorder({position, obo, to, obi, ti, sm.axis(sm.num_axes() - 1)});
    sm.vectorize(sm.axis(sm.num_axes() - 1));
    sm.unroll(obi);
    if (root_parallel) sm.parallel(sm.fuse(position, obo));
    te::Stage& sa = accumulate_at(s, product, sm, to);
    sa.unroll(sa.axis(2));
    sa.unroll(sa.axis(3));

    // The input transform (attached after its reader, the product): per (tile, block), its
    // rows in registers, V's alpha^2 vectors out.
    te::Stage& sv = s[V];
    if (chunk != 0) sv.compute_at(so, chunk_loop);
    sv.reorder({sv.axis(3), sv.axis(2), sv.axis(0), sv.axis(1), sv.axis(4)});
    sv.unroll(sv.axis(0));
    sv.unroll(sv.axis(1));
    sv.vectorize(sv.axis(4));
    if (root_parallel) sv.parallel(sv.axis(3));
    te::Stage& sr = s[rows];
    sr.compute_at(sv, sv.axis(2));
    sr.unroll(sr.axis(0));
    sr.unroll(sr.axis(3));
    sr.vectorize(sr.axis(4));

    // The output transform: per output tile, its rows then the tile in registers; Y copies
    // the tile (part of it at the ends of rows and columns) with the bias and epilogue.
    te::Stage& st = s[tile];
    st.compute_at(so, tile_loop);
    st.unroll(st.axis(2));
    st.unroll(st.axis(3));
    st.vectorize(st.axis(4));
    te::Stage& sz = s[out_rows];
    sz.compute_at(st, st.axis(1));
    sz.unroll(sz.axis(0));
    sz.unroll(sz.axis(3));
    sz.vectorize(sz.axis(4));
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
