// Dynamic batching's data side: which axis of each input and output is the batch axis,
// which requests may share a run (equal shapes, equal values in the inputs that have no
// batch axis), and joining inputs / splitting outputs along those axes. The queue that
// decides when to run a batch is served_model.h's.
//
// The batch axis of a tensor is, by default, the first symbolic dim of its signature
// entry ([batch, 3, 48, width] -> 0; Silero's state [2, batch, 128] -> 1): what a model
// exported with a dynamic batch treats row by row. `name=axis` overrides it per tensor
// (-1: not batched). Whether the model really treats rows independently is the
// operator's claim (`vmserve --batch`); tests check batched against unbatched answers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vm/executable.h"
#include "vm/tensor.h"

namespace dynvm::serve {

struct BatchAxes {
  std::vector<int> inputs;   // per input in signature order; -1: no batch axis
  std::vector<int> outputs;  // per output; every output has one
};

// Throws UserError when an output has no batch axis, an override names no input or
// output or an axis the tensor does not have, or no input is batched.
BatchAxes batch_axes(const vm::Executable& exe, const std::map<std::string, int>& overrides);

// Requests with equal keys may run as one batch: the shapes of all inputs, and the bytes
// of the inputs with no batch axis (small ones only: nullopt when one is over 256 bytes,
// and the request then runs alone).
std::optional<std::string> batch_key(const BatchAxes& axes, std::span<const vm::Tensor> inputs);

// The rows one request brings: the extent of its first batched input's batch axis.
int64_t batch_rows(const BatchAxes& axes, std::span<const vm::Tensor> inputs);

// `parts` (equal shapes) joined along `axis`.
vm::Tensor concat_along(std::span<const vm::Tensor> parts, int axis);

// `t` cut into `parts` equal slices along `axis`; nullopt when its extent there does not
// divide evenly.
std::optional<std::vector<vm::Tensor>> split_along(const vm::Tensor& t, int axis, int64_t parts);

}  // namespace dynvm::serve
