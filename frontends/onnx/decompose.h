// Node outputs that existing operators compute, built by the importer next to the node
// instead of a kernel of their own: Dropout's mask, BatchNormalization's training-mode
// outputs, and Einsums that are matrix products.
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

// Einsum of two operands that is one matrix product (optionally batched), as MatMul between
// Transposes: one contracted letter, every other letter in the output, at most one free
// letter of the second operand, and with batch letters exactly one free letter of each
// ("bhqd,bhkd->bhqk", "btc,cd->btd", "ij,kj->ik", "i,i->"). The MatMul templates and their
// packed constant weights then compute it, where the generic Einsum kernel runs a scalar
// reduction (a "btc,cd->btd" over [8, 1000, 16] x [16, 24]: 1.3 ms). Undefined when the
// equation is not of that form (ellipses, repeated letters, sums over one operand's letter).
compiler::Expr einsum_as_matmul(const NodeForm& form, const Emit& emit);

}  // namespace dynvm::frontends::onnx_import
