// TfIdfVectorizer compiled for the host: unigrams and bigrams with skips over a symbolic
// [N, C] int32 input and a [C] int64 one, in the three modes. The reference counts every
// pooled n-gram occurrence by plain loops (unigrams once, n-grams per skip).
#include "kernels/ops/tfidf.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

// Unigrams {2, 3} and bigrams {5, 4}, {5, 6}, {7, 8}; columns 1, 0, 2, 3, 5 (4 is unused).
TfIdfAttrs attrs(TfIdfMode mode, int64_t min, int64_t max, int64_t skip) {
  TfIdfAttrs a;
  a.mode = mode;
  a.min_gram_length = min;
  a.max_gram_length = max;
  a.max_skip_count = skip;
  a.ngram_counts = {0, 2};
  a.ngram_indexes = {1, 0, 2, 3, 5};
  a.pool_int64s = {2, 3, 5, 4, 5, 6, 7, 8};
  a.weights = {0.5, 2, 3, 0.25, 4};
  return a;
}

std::vector<double> reference(const vm::Tensor& x, int64_t rows, int64_t c, const TfIdfAttrs& a) {
  std::vector<double> out(static_cast<size_t>(rows * 6), 0.0);
  const std::vector<std::vector<int64_t>> grams = {{2}, {3}, {5, 4}, {5, 6}, {7, 8}};
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t g = 0; g < grams.size(); ++g) {
      const auto n = static_cast<int64_t>(grams[g].size());
      if (n < a.min_gram_length || n > a.max_gram_length) continue;
      double count = 0;
      for (int64_t s = 0; s <= (n == 1 ? 0 : a.max_skip_count); ++s) {
        for (int64_t p = 0; p + (n - 1) * (s + 1) < c; ++p) {
          bool hit = true;
          for (int64_t m = 0; m < n; ++m) {
            hit = hit && at(x, r * c + p + m * (s + 1)) == static_cast<double>(grams[g][m]);
          }
          count += hit ? 1 : 0;
        }
      }
      const double w = a.weights[g];
      double v = a.mode == TfIdfMode::kTF      ? count
                 : a.mode == TfIdfMode::kTFIDF ? count * w
                                               : (count > 0 ? w : 0);
      out[static_cast<size_t>(r * 6 + a.ngram_indexes[g])] = v;
    }
  }
  return out;
}

// Tokens 2..9: many matches.
vm::Tensor tokens(const vm::Shape& s, vm::DType dtype, std::mt19937& rng) {
  return random_tensor(s, dtype, rng, 2, 9);
}

TEST(TfIdfVectorizer, ModesSkipsAndGramLengths) {
  arith::Var rows("rows"), c("c");
  struct Case {
    std::string name;
    TfIdfAttrs a;
  };
  const std::vector<Case> cases = {{"tf_uni_bi_skip2", attrs(TfIdfMode::kTF, 1, 2, 2)},
                                   {"idf_bi_skip0", attrs(TfIdfMode::kIDF, 2, 2, 0)},
                                   {"tfidf_uni_skip3", attrs(TfIdfMode::kTFIDF, 1, 1, 3)},
                                   {"tfidf_uni_bi_skip1", attrs(TfIdfMode::kTFIDF, 1, 2, 1)}};
  std::vector<OpToBuild> ops;
  for (const Case& k : cases) ops.push_back({k.name, tfidf_vectorizer({kI32, {rows, c}}, k.a)});
  ops.push_back({"rank1_i64", tfidf_vectorizer({kI64, {c}}, cases[0].a)});
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(5);
  for (int64_t len : {1, 2, 6, 17}) {
    vm::Tensor x = tokens({3, len}, kI32, rng);
    for (const Case& k : cases) {
      vm::Tensor y = run_op(lib, k.name, {x}, {3, 6}, kF32);
      expect_close(y, reference(x, 3, len, k.a), 0, 1e-6, k.name);
    }
    vm::Tensor v = tokens({len}, kI64, rng);
    vm::Tensor y = run_op(lib, "rank1_i64", {v}, {6}, kF32);
    expect_close(y, reference(v, 1, len, cases[0].a), 0, 1e-6, "rank1_i64");
  }
}

TEST(TfIdfVectorizerBuilder, RejectsBadAttributes) {
  arith::Var c("c");
  TfIdfAttrs a = attrs(TfIdfMode::kTF, 1, 2, 0);
  EXPECT_USER_ERROR(tfidf_vectorizer({kF32, {c}}, a), "int32 or int64");
  a.ngram_counts = {0, 3};  // 5 items left for bigrams
  EXPECT_USER_ERROR(tfidf_vectorizer({kI64, {c}}, a), "2-grams");
  EXPECT_USER_ERROR(tfidf_mode("BM25"), "mode must be TF, IDF or TFIDF");
}

}  // namespace
}  // namespace dynvm::ops::testing
