// Fused attention (kernels/ops/attention.h) against double loops of its definition: symbolic
// and static shapes, query and key lengths that are not multiples of the row block or of the
// 16 lanes (1 included), broadcast batch dims, a broadcast additive mask with -inf entries,
// and tuned knobs.
#include "kernels/ops/attention.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "tests/kernels/ops/op_test_util.h"

namespace dynvm::ops::testing {
namespace {

// softmax(scale * Q Kt + mask) V in double, batch dims broadcast; mask empty or of any
// shape broadcasting to the scores'.
std::vector<double> reference(const vm::Tensor& q, const vm::Tensor& kt, const vm::Tensor& v,
                              const vm::Tensor* mask, double scale, const vm::Shape& out) {
  const size_t rank = out.size();
  const int64_t lq = out[rank - 2], dv = out[rank - 1];
  const int64_t d = q.shape()[rank - 1], lk = kt.shape()[rank - 1];
  vm::Shape batch(out.begin(), out.end() - 2);
  vm::Shape scores = batch;
  scores.push_back(lq);
  scores.push_back(lk);
  auto batch_of = [](const vm::Tensor& t) {
    return vm::Shape(t.shape().begin(), t.shape().end() - 2);
  };
  std::vector<double> y(static_cast<size_t>(numel(out)));
  const int64_t batches = numel(batch);
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t bq = broadcast_index(batch_of(q), batch, b);
    const int64_t bk = broadcast_index(batch_of(kt), batch, b);
    const int64_t bv = broadcast_index(batch_of(v), batch, b);
    for (int64_t i = 0; i < lq; ++i) {
      std::vector<double> z(static_cast<size_t>(lk));
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < lk; ++j) {
        double s = 0;
        for (int64_t k = 0; k < d; ++k) {
          s += at(q, (bq * lq + i) * d + k) * at(kt, (bk * d + k) * lk + j);
        }
        s *= scale;
        if (mask != nullptr) {
          s += at(*mask, broadcast_index(mask->shape(), scores, (b * lq + i) * lk + j));
        }
        z[static_cast<size_t>(j)] = s;
        top = std::max(top, s);
      }
      double sum = 0;
      for (double& e : z) sum += (e = std::exp(e - top));
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < lk; ++j)
          acc += z[static_cast<size_t>(j)] * at(v, (bv * lk + j) * dv + c);
        y[static_cast<size_t>((b * lq + i) * dv + c)] = acc / sum;
      }
    }
  }
  return y;
}

class Attention : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var b("b"), lq("lq"), lk("lk");
    std::vector<OpToBuild> ops;
    // [b, 3, lq, 16] x [b, 3, 16, lk] x [b, 3, lk, 24]
    TensorType q{kF32, {b, 3, lq, 16}}, kt{kF32, {b, 3, 16, lk}}, v{kF32, {b, 3, lk, 24}};
    ops.push_back({"sym", attention(q, kt, v, std::nullopt, 0.25)});
    // A mask [b, 1, 1, lk] (BERT's padding mask) and one [lq, lk] (a causal one).
    ops.push_back({"masked", attention(q, kt, v, TensorType{kF32, {b, 1, 1, lk}}, 0.25)});
    ops.push_back({"causal", attention(q, kt, v, TensorType{kF32, {lq, lk}}, 0.25)});
    // K and V shared by every head ([b, 1, ...]), D = 5, Dv = 40.
    ops.push_back({"shared_kv", attention({kF32, {b, 4, lq, 5}}, {kF32, {b, 1, 5, lk}},
                                          {kF32, {b, 1, lk, 40}}, std::nullopt, 1.0)});
    ops.push_back({"static", attention({kF32, dims({2, 21, 8})}, {kF32, dims({2, 8, 37})},
                                       {kF32, dims({2, 37, 16})}, std::nullopt, 0.5)});
    ops.push_back(
        {"tuned", attention(q, kt, v, std::nullopt, 0.25), {{"tile_m", 6}, {"parallel", 0}}});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;

  static void check(const std::string& symbol, const vm::Shape& qs, const vm::Shape& ks,
                    const vm::Shape& vs, const vm::Shape* ms, double scale, std::mt19937& rng) {
    vm::Tensor q = random_tensor(qs, kF32, rng, -2, 2);
    vm::Tensor kt = random_tensor(ks, kF32, rng, -2, 2);
    vm::Tensor v = random_tensor(vs, kF32, rng, -1, 1);
    std::vector<vm::Tensor> in{q, kt, v};
    vm::Tensor mask;
    if (ms != nullptr) {
      mask = random_tensor(*ms, kF32, rng, -3, 0);
      // Some keys masked out entirely, as padding masks do (never a whole row).
      for (int64_t i = 0; i < mask.numel(); i += 3) {
        if ((*ms).back() > 1 && i % (*ms).back() != 0) {
          mask.data_as<float>()[i] = -std::numeric_limits<float>::infinity();
        }
      }
      in.push_back(mask);
    }
    const size_t rank = qs.size();
    vm::Shape out;
    for (size_t k = 0; k + 2 < rank; ++k) out.push_back(std::max({qs[k], ks[k], vs[k]}));
    out.push_back(qs[rank - 2]);
    out.push_back(vs[rank - 1]);
    vm::Tensor y = run_op(*lib_, symbol, in, out, kF32);
    expect_close(y, reference(q, kt, v, ms != nullptr ? &mask : nullptr, scale, out), 1e-4, 1e-5,
                 symbol + " " + shape_name(qs) + " x " + shape_name(ks));
  }
};
OpLibrary* Attention::lib_ = nullptr;

TEST_F(Attention, MatchesSoftmaxOfScaledScoresTimesV) {
  std::mt19937 rng(5);
  // Query and key lengths: 1, below, at and past the 8-row block and the 16 lanes.
  for (auto [lq, lk] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {1, 7}, {5, 16}, {8, 33}, {17, 100}, {40, 5}}) {
    for (int64_t b : {1, 2}) {
      check("sym", {b, 3, lq, 16}, {b, 3, 16, lk}, {b, 3, lk, 24}, nullptr, 0.25, rng);
      check("tuned", {b, 3, lq, 16}, {b, 3, 16, lk}, {b, 3, lk, 24}, nullptr, 0.25, rng);
    }
  }
}

TEST_F(Attention, AddsABroadcastMaskBeforeTheSoftmax) {
  std::mt19937 rng(6);
  for (auto [lq, lk] : std::vector<std::pair<int64_t, int64_t>>{{1, 9}, {13, 31}, {24, 64}}) {
    const vm::Shape padding{2, 1, 1, lk}, causal{lq, lk};
    check("masked", {2, 3, lq, 16}, {2, 3, 16, lk}, {2, 3, lk, 24}, &padding, 0.25, rng);
    check("causal", {2, 3, lq, 16}, {2, 3, 16, lk}, {2, 3, lk, 24}, &causal, 0.25, rng);
  }
}

TEST_F(Attention, BroadcastsKeysAndValuesOverHeads) {
  std::mt19937 rng(7);
  check("shared_kv", {2, 4, 11, 5}, {2, 1, 5, 19}, {2, 1, 19, 40}, nullptr, 1.0, rng);
  check("static", {2, 21, 8}, {2, 8, 37}, {2, 37, 16}, nullptr, 0.5, rng);
}

}  // namespace
}  // namespace dynvm::ops::testing
