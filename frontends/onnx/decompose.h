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

// Einsum of two operands without diagonals or ellipses, from existing operators: a letter
// of one operand only that the output lacks is summed first (ReduceSum); with no free letter
// left, a product summed over the contracted letters ("nchw,nchw->nc"); else one MatMul
// between Transposes ("bhqd,bhkd->bhqk", "btc,cd->btd", "ij,kj->ik"), where a group of
// letters (batch, free of A, contracted, free of B) with several letters is one dim of a
// Reshape, its size the product of the Shape's dims, and the product is reshaped back to its
// letters ("nsd,edh->nseh": [n*s, d] x [d, e*h]). The MatMul templates and their packed
// constant weights then compute it, where the generic Einsum kernel runs a scalar reduction
// ("btc,cd->btd" over [8, 1000, 16] x [16, 24]: 1.3 ms; a mixture of experts' two einsums
// over [1, 512, 64] with 4 experts of 128: 4.1 -> 0.6 ms). Undefined for other equations.
compiler::Expr einsum_as_matmul(const NodeForm& form, const Emit& emit);

}  // namespace dynvm::frontends::onnx_import
