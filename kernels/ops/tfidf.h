// ONNX TfIdfVectorizer over integer tokens (pool_int64s; pool_strings is a string op, not
// supported). For every pooled n-gram with n in [min_gram_length, max_gram_length] and every
// skip s in [0, max_skip_count] (unigrams counted once), the occurrences whose items are
// s + 1 apart are counted, as ONNX Runtime does; TF = count, IDF = weight when count > 0,
// TFIDF = count * weight. The pool is constant, so the kernel unrolls over it: one
// reduction over (start position, skip) whose body compares every pooled n-gram, cost
// O(rows * outputs * C * (max_skip_count + 1) * pool items) with C the row length.
// Scheduled with the reduction template (knobs `parallel`, `unroll`).
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class TfIdfMode : uint8_t { kTF, kIDF, kTFIDF };

struct TfIdfAttrs {
  TfIdfMode mode = TfIdfMode::kTF;
  int64_t min_gram_length = 1;
  int64_t max_gram_length = 1;
  int64_t max_skip_count = 0;
  std::vector<int64_t> ngram_counts;   // start of the (k+1)-grams in pool_int64s
  std::vector<int64_t> ngram_indexes;  // output column of each pooled n-gram, in pool order
  std::vector<int64_t> pool_int64s;
  std::vector<double> weights;  // one per pooled n-gram; empty: all 1
};

// "TF", "IDF" or "TFIDF" (UserError otherwise).
TfIdfMode tfidf_mode(const std::string& name);

// x: int32 / int64 [C] or [N, C]. Output f32 [max(ngram_indexes) + 1] or [N, that]. Checks
// the attributes' consistency (UserError).
OpInstance tfidf_vectorizer(const TensorType& x, const TfIdfAttrs& attrs);

}  // namespace dynvm::ops
