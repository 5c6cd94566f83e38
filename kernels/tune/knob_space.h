// The configurations a schedule template can take: the cartesian product of its knobs'
// candidates (ops::KnobSpec), numbered in mixed radix so that a search can draw, walk and
// remember them by index.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::tune {

class KnobSpace {
 public:
  // Each knob's candidates, and its default when that is not one of them.
  explicit KnobSpace(std::vector<ops::KnobSpec> knobs);

  // How many configurations there are (1 for a template without knobs).
  uint64_t size() const { return size_; }
  const std::vector<ops::KnobSpec>& knobs() const { return knobs_; }

  ops::KnobValues at(uint64_t index) const;
  // The index of `values` (knobs missing from it take their defaults); UserError when a
  // value is not among its knob's candidates.
  uint64_t index_of(const ops::KnobValues& values) const;
  uint64_t default_index() const { return index_of({}); }
  // A uniformly drawn configuration.
  uint64_t random(std::mt19937_64& rng) const;
  // A configuration that differs from `index` in one knob (the annealer's step); `index`
  // itself when no knob has two candidates.
  uint64_t neighbour(uint64_t index, std::mt19937_64& rng) const;

 private:
  std::vector<ops::KnobSpec> knobs_;
  uint64_t size_ = 1;
};

}  // namespace dynvm::tune
