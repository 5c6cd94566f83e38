// Turns vmrun's --input arguments into the entry function's arguments: each source is a
// .npy file or SHAPE:DTYPE (random values from a fixed seed), bound by name or, without
// a name, to the next unbound input in signature order. Errors name the input and list
// what the model takes, so a user can fix the command line without reading the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tools/vmrun/cli_options.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace dynvm::vmrun {

// SHAPE:DTYPE, e.g. "4x3x48x320:f32", "scalar:i64", ":bool".
struct RandomSpec {
  vm::Shape shape;
  vm::DType dtype = vm::DType::kFloat32;
};

// Whether `source` names a random tensor rather than a file: it does not end in ".npy"
// and contains ':'. Then returns the spec, or throws UsageError if it does not parse.
std::optional<RandomSpec> parse_random_spec(std::string_view source);

// Floats uniform in [-1, 1), integers in [0, 10), bools true or false; complex numbers
// draw both parts as floats. The same seed gives the same values.
vm::Tensor random_tensor(const RandomSpec& spec, uint64_t seed);

// The inputs in signature order. Throws UserError for an unknown, duplicate or missing
// input or a bad file; dtype, rank and dim ranges are Program::check_inputs' to check.
std::vector<vm::Value> bind_inputs(const vm::Executable& exe, const std::vector<InputArg>& args,
                                   uint64_t seed);

}  // namespace dynvm::vmrun
