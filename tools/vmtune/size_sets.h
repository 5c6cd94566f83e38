// The input sizes vmtune runs a model at to find where its kernels spend their time:
// from --sizes specs, or sampled from the signature's symbolic dims.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "vm/executable.h"

namespace dynvm::vmtune {

// One run's inputs: a shape per input of the signature, in order.
using SizeSet = std::vector<vm::Shape>;

// "x=1x3x48x{100,320,960}" (inputs separated by ';'; every {a,b,...} group multiplies the
// sets): one SizeSet per combination. Inputs not named take their static shape, inputs in
// `valued` (given a value with --input) an empty one; a missing symbolic one, a rank or
// constant dim that does not match, or a value outside the dim's range is a UsageError
// naming it.
std::vector<SizeSet> parse_size_spec(const std::string& spec, const vm::Executable& exe,
                                     const std::set<std::string>& valued = {});

// Without --sizes: three sets, every symbolic dim at the low end of its range, in the middle
// and higher up (geometrically), capped at 8 for leading (batch-like) dims and 256 for the
// others so that sampling stays cheap; dims that share a symbol share a value. Inputs in
// `valued` get an empty shape.
std::vector<SizeSet> sample_size_sets(const vm::Executable& exe,
                                      const std::set<std::string>& valued = {});

// "x=1x3x48x320 y=..." for messages.
std::string describe(const SizeSet& s, const vm::Executable& exe);

}  // namespace dynvm::vmtune
