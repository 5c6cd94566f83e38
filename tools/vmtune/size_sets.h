// The input sizes vmtune runs a model at to find where its kernels spend their time, and
// vmbench measures it at: from --sizes specs, from served traffic, or sampled from the
// signature's symbolic dims.
#pragma once

#include <map>
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
// naming it; without `check_dims` only the rank is checked (vmbench measures such a size
// with the builds that can take it and names the error of the others).
std::vector<SizeSet> parse_size_spec(const std::string& spec, const vm::Executable& exe,
                                     const std::set<std::string>& valued = {},
                                     bool check_dims = true);

// Without --sizes: three sets, every symbolic dim at the low end of its range, in the middle
// and higher up (geometrically), capped at 8 for leading (batch-like) dims and 256 for the
// others so that sampling stays cheap; dims that share a symbol share a value. Inputs in
// `valued` get an empty shape.
std::vector<SizeSet> sample_size_sets(const vm::Executable& exe,
                                      const std::set<std::string>& valued = {});

// The sizes of served traffic (the shapes file vmserve writes, FILE[:MODEL]), the most
// frequent first, at most kMaxTrafficSizes of them, appended to `sets` with their request
// counts appended to `weights`. Inputs in `valued` get an empty shape. Throws UserError.
inline constexpr size_t kMaxTrafficSizes = 8;
void traffic_size_sets(const std::string& spec, const vm::Executable& exe,
                       const std::set<std::string>& valued, std::vector<SizeSet>& sets,
                       std::vector<double>& weights);

// What vmtune and vmbench run a model at, from their shared flags: --sizes specs, then the
// sizes of a shapes file (--sizes-from, weighted by request counts), else sampled sizes;
// --input NAME=FILE.npy gives an input one value for every size.
struct ChosenSizes {
  std::vector<SizeSet> sets;
  std::vector<double> weights;               // parallel to sets; 1 unless from traffic
  std::map<std::string, vm::Tensor> valued;  // --input values, by input name
  std::set<std::string> valued_names;
};
// `check_dims` as for parse_size_spec. Throws UsageError for an --input the model does not
// have, UserError for a file it cannot read.
ChosenSizes choose_sizes(const std::vector<std::string>& specs, const std::string& sizes_from,
                         const std::map<std::string, std::string>& inputs,
                         const vm::Executable& exe, bool check_dims);

// "x=1x3x48x320 y=scalar ..." for messages, leaving out the inputs in `skip` (the ones
// given a value).
std::string describe(const SizeSet& s, const vm::Executable& exe,
                     const std::set<std::string>& skip = {});

}  // namespace dynvm::vmtune
