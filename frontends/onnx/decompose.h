// Node outputs that existing operators compute, built by the importer next to the node
// instead of a kernel of their own: Dropout's mask and BatchNormalization's training-mode
// outputs.
#pragma once

#include <functional>
#include <string>

#include "compiler/ir/expr.h"
#include "frontends/onnx/normalize.h"

namespace dynvm::frontends::onnx_import {

// Binds `value` as an intermediate of the node being imported (named after `what`) and
// returns its variable.
using Emit = std::function<compiler::Expr(const std::string& what, compiler::Expr value)>;

// Dropout with its mask: (output, mask). The mask is all true: nothing is dropped in the
// only modes that compute (inference, or a ratio of 0; Dropout's binding refuses the rest).
compiler::Expr dropout_with_mask(NodeForm form, const Emit& emit);

// BatchNormalization with training_mode=1: (Y, running_mean, running_var). Y normalizes with
// the batch's mean and biased variance over every axis but 1 (X viewed as [N, C, rest]);
// running = input * momentum + current * (1 - momentum). UserError naming `where` for
// several outputs without training_mode.
compiler::Expr batch_norm_training(NodeForm form, const Emit& emit, const std::string& where);

}  // namespace dynvm::frontends::onnx_import
