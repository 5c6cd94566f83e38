// ONNX operators that dynvm has no rule for, but whose schema defines them as a function of
// other operators (libonnx's OpSchema function bodies, context-dependent ones included:
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, CastLike, Celu, the window functions,
// MeanVarianceNormalization, DynamicQuantizeLinear, ...), are replaced in the model by their
// bodies before import, so coverage grows with the ONNX release rather than by hand.
//
// Rounds until nothing is left to inline (a body may call another function: SCE's calls
// NegativeLogLikelihoodLoss): ONNX shape inference types the graph (context-dependent
// bodies depend on their inputs' element types), then each node whose operator the
// importer does not support (normalize.h) and whose schema has a body at the model's opset
// becomes the body's nodes, its values renamed apart (`<node>/<name>`), its attribute
// references resolved from the node's attributes, subgraphs included.
//
// A body is written against its own opset (FunctionProto::opset_import), which may differ
// from the model's; `NodeOpsets` names the inlined nodes' opsets so that the importer
// normalizes each node at the opset it was written for.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>

namespace dynvm::frontends::onnx_import {

// Inlined node name -> the opset of the default domain its body was written for.
using NodeOpsets = std::map<std::string, int64_t>;

// Inlines in place; `opset` is the model's opset of the default domain. Nodes without a
// body are left for the importer to refuse, naming them.
NodeOpsets inline_functions(onnx::ModelProto& model, int64_t opset);

}  // namespace dynvm::frontends::onnx_import
