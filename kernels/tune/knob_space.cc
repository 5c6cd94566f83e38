#include "kernels/tune/knob_space.h"

#include <algorithm>
#include <limits>

#include "vm/error.h"

namespace dynvm::tune {

KnobSpace::KnobSpace(std::vector<ops::KnobSpec> knobs) : knobs_(std::move(knobs)) {
  for (ops::KnobSpec& k : knobs_) {
    // A template may default to a value fitted to the shape (a conv's width tile of 3 for
    // an output 3 wide) that is not among the candidates: the space holds it too.
    if (std::find(k.candidates.begin(), k.candidates.end(), k.default_value) ==
        k.candidates.end()) {
      k.candidates.push_back(k.default_value);
    }
    DYNVM_INTERNAL_CHECK(!k.candidates.empty(), "knob ", k.name, " has no candidates");
    DYNVM_INTERNAL_CHECK(size_ <= std::numeric_limits<uint64_t>::max() / k.candidates.size(),
                         "knob space too large");
    size_ *= k.candidates.size();
  }
}

ops::KnobValues KnobSpace::at(uint64_t index) const {
  DYNVM_INTERNAL_CHECK(index < size_, "configuration ", index, " of ", size_);
  ops::KnobValues values;
  for (const ops::KnobSpec& k : knobs_) {
    values[k.name] = k.candidates[index % k.candidates.size()];
    index /= k.candidates.size();
  }
  return values;
}

uint64_t KnobSpace::index_of(const ops::KnobValues& values) const {
  uint64_t index = 0, stride = 1;
  for (const ops::KnobSpec& k : knobs_) {
    auto given = values.find(k.name);
    const int64_t v = given == values.end() ? k.default_value : given->second;
    auto it = std::find(k.candidates.begin(), k.candidates.end(), v);
    if (it == k.candidates.end()) user_error("knob ", k.name, "=", v, " is not one of its values");
    index += stride * static_cast<uint64_t>(it - k.candidates.begin());
    stride *= k.candidates.size();
  }
  return index;
}

uint64_t KnobSpace::random(std::mt19937_64& rng) const {
  return std::uniform_int_distribution<uint64_t>(0, size_ - 1)(rng);
}

uint64_t KnobSpace::neighbour(uint64_t index, std::mt19937_64& rng) const {
  std::vector<size_t> movable;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    if (knobs_[i].candidates.size() > 1) movable.push_back(i);
  }
  if (movable.empty()) return index;
  const size_t pick = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  uint64_t stride = 1;
  for (size_t i = 0; i < pick; ++i) stride *= knobs_[i].candidates.size();
  const uint64_t n = knobs_[pick].candidates.size();
  const uint64_t digit = index / stride % n;
  const uint64_t other = (digit + std::uniform_int_distribution<uint64_t>(1, n - 1)(rng)) % n;
  return index - digit * stride + other * stride;
}

}  // namespace dynvm::tune
