// TfIdfVectorizer (see tfidf.h): the pool unrolled into one reduction's body.
#include "kernels/ops/tfidf.h"

#include <algorithm>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

struct Gram {
  std::vector<int64_t> items;
  int64_t column = 0;
  double weight = 1;
};

// The pooled n-grams with n in [min, max], in pool order with their columns and weights.
std::vector<Gram> pooled_grams(const TfIdfAttrs& a) {
  const auto pool = static_cast<int64_t>(a.pool_int64s.size());
  std::vector<Gram> grams;
  int64_t g = 0;  // index of the n-gram over the whole pool
  for (size_t level = 0; level < a.ngram_counts.size(); ++level) {
    const auto n = static_cast<int64_t>(level + 1);
    const int64_t begin = a.ngram_counts[level];
    const int64_t end = level + 1 < a.ngram_counts.size() ? a.ngram_counts[level + 1] : pool;
    if (begin < 0 || end < begin || end > pool || (end - begin) % n != 0) {
      user_error("tfidf_vectorizer: ngram_counts do not split pool_int64s into ", n, "-grams");
    }
    for (int64_t at = begin; at < end; at += n, ++g) {
      if (g >= static_cast<int64_t>(a.ngram_indexes.size())) {
        user_error("tfidf_vectorizer: ngram_indexes has fewer entries than the pool's n-grams");
      }
      if (n < a.min_gram_length || n > a.max_gram_length) continue;
      Gram gram;
      gram.items.assign(a.pool_int64s.begin() + at, a.pool_int64s.begin() + at + n);
      gram.column = a.ngram_indexes[static_cast<size_t>(g)];
      if (!a.weights.empty()) {
        if (g >= static_cast<int64_t>(a.weights.size())) {
          user_error("tfidf_vectorizer: weights has fewer entries than the pool's n-grams");
        }
        gram.weight = a.weights[static_cast<size_t>(g)];
      }
      grams.push_back(std::move(gram));
    }
  }
  return grams;
}

}  // namespace

TfIdfMode tfidf_mode(const std::string& name) {
  if (name == "TF") return TfIdfMode::kTF;
  if (name == "IDF") return TfIdfMode::kIDF;
  if (name == "TFIDF") return TfIdfMode::kTFIDF;
  user_error("tfidf_vectorizer: mode must be TF, IDF or TFIDF, got '", name, "'");
}

OpInstance tfidf_vectorizer(const TensorType& x, const TfIdfAttrs& a) {
  if (x.dtype != vm::DType::kInt32 && x.dtype != vm::DType::kInt64) {
    user_error("tfidf_vectorizer: the input must be int32 or int64 tokens");
  }
  if (x.shape.size() != 1 && x.shape.size() != 2) {
    user_error("tfidf_vectorizer: the input must be [C] or [N, C]");
  }
  if (a.min_gram_length < 1 || a.max_gram_length < a.min_gram_length || a.max_skip_count < 0) {
    user_error(
        "tfidf_vectorizer: needs 1 <= min_gram_length <= max_gram_length and "
        "max_skip_count >= 0");
  }
  if (a.ngram_indexes.empty()) user_error("tfidf_vectorizer: ngram_indexes is empty");
  if (*std::min_element(a.ngram_indexes.begin(), a.ngram_indexes.end()) < 0) {
    user_error("tfidf_vectorizer: ngram_indexes must be >= 0");
  }
  const int64_t columns = *std::max_element(a.ngram_indexes.begin(), a.ngram_indexes.end()) + 1;
  const std::vector<Gram> grams = pooled_grams(a);
  const bool batched = x.shape.size() == 2;
  const arith::Expr length = x.shape.back();
  std::vector<arith::Expr> out_shape = {arith::Expr(columns)};
  if (batched) out_shape.insert(out_shape.begin(), x.shape[0]);
  const tir::DataType f32 = tir::f32(), token{x.dtype, 1};
  auto flag = [](const arith::Expr& c) { return tir::index_value(c, tir::boolean()); };
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  // Counts (times the weight for TFIDF) per output column.
  te::TensorRef counts = te::compute("T", out_shape, [&](const te::Indices& o) {
    te::IterVar p = te::reduce_axis(length, "p");
    te::IterVar s = te::reduce_axis(arith::Expr(a.max_skip_count + 1), "s");
    const arith::Expr column = o.back();
    tir::Expr total = tir::make_const(f32, 0);
    for (const Gram& g : grams) {
      const auto n = static_cast<int64_t>(g.items.size());
      const arith::Expr gap = arith::Expr(s.var) + arith::Expr(1);
      const arith::Expr last = arith::Expr(p.var) + arith::Expr(n - 1) * gap;
      arith::Expr where = arith::logical_and(arith::eq(column, g.column), arith::lt(last, length));
      if (n == 1) where = arith::logical_and(where, arith::eq(s.var, 0));
      tir::Expr hit = flag(where);
      for (int64_t m = 0; m < n; ++m) {
        arith::Expr at =
            arith::min(arith::Expr(p.var) + arith::Expr(m) * gap, length - arith::Expr(1));
        std::vector<arith::Expr> index = {at};
        if (batched) index.insert(index.begin(), o[0]);
        hit = tir::logical_and(hit, tir::compare(tir::CompareOp::kEq, te::read(in, index),
                                                 tir::make_const_int(token, g.items[m])));
      }
      const double w = a.mode == TfIdfMode::kTFIDF ? g.weight : 1.0;
      total = total + tir::select(hit, tir::make_const(f32, w), tir::make_const(f32, 0));
    }
    return te::sum(total, {p, s});
  });
  te::TensorRef out = counts;
  if (a.mode == TfIdfMode::kIDF) {
    out = te::compute("Y", out_shape, [&](const te::Indices& o) {
      std::vector<arith::Expr> at(o.begin(), o.end());
      tir::Expr weight = tir::make_const(f32, 0);
      for (const Gram& g : grams) {
        weight = tir::select(flag(arith::eq(o.back(), g.column)), tir::make_const(f32, g.weight),
                             weight);
      }
      tir::Expr seen =
          tir::compare(tir::CompareOp::kGt, te::read(counts, at), tir::make_const(f32, 0));
      return tir::select(seen, weight, tir::make_const(f32, 0));
    });
  }
  OpInstance op;
  static const char* kModes[] = {"tf", "idf", "tfidf"};
  op.name = std::string("tfidf_vectorizer_") + kModes[static_cast<int>(a.mode)] + "_" +
            dtype_suffix(x.dtype);
  op.inputs = {in};
  op.outputs = {out};
  op.knobs = reduction_knobs(out_shape);
  op.schedule = [specs = op.knobs, counts, out](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    schedule_reduction(s, counts, parallel, knob_value(specs, knobs, "unroll"));
    if (out.get() != counts.get()) schedule_injective(s, out, 1, parallel);
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
