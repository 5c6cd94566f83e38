// TEST-ONLY: one ONNX backend node test (OUTDIR/node/test_*/: model.onnx and
// test_data_set_0/{input,output}_N.pb, from scripts/gen-conformance.sh) read for our stack,
// and the value comparison the suite uses.
//
// Inputs that our compiler reads at compile time (Slice's starts, Reshape's shape, Clip's
// bounds, reduction axes, Resize's scales, ...) are graph inputs in many node tests; a
// model deployed with dynvm has them as initializers, so the loader moves such inputs, with
// the test's values, into the graph's initializers before the model is imported.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "vm/tensor.h"
#include "vm/value.h"

namespace dynvm::conformance {

struct NodeCase {
  std::string name;                 // "test_abs"
  std::vector<std::string> ops;     // the op types of the top-level graph's nodes
  std::string unsupported;          // non-empty: why the case is outside what we import
  std::string model_bytes;          // the model with compile-time inputs folded in
  std::vector<vm::Tensor> inputs;   // the remaining (run-time) inputs, in graph order
  std::vector<vm::Tensor> outputs;  // the expected outputs, in graph order
  std::vector<std::string> folded;  // names of the inputs folded into initializers
  frontends::onnx_import::ImportOptions options;  // symbolic dims bound to the test shapes
};

// The node test folders, DIR/node/test_* with DIR = $DYNVM_CONFORMANCE_DIR or `default_dir`,
// sorted; none (and a gtest failure saying how to make them) when there are none.
std::vector<std::filesystem::path> case_dirs(const char* default_dir);

// A list of cases, `test_name rest of line` per line (blank lines and '#' comments
// skipped): name -> rest. A gtest failure for an unreadable file, a line with nothing
// after the name, or a name listed twice.
std::map<std::string, std::string> read_case_list(const std::filesystem::path& file);

// The node test in `dir`. Throws (UserError / std::exception) when its files are unreadable.
NodeCase load_case(const std::filesystem::path& dir);

// The node test as a user runs it (`vmc model.onnx` with no flags, `vmrun` on
// test_data_set_0): the model unchanged, every graph input that is not an initializer with
// its test value, the expected outputs. `not_applicable` says why the case is outside what
// an engine like dynvm runs (random generators, training-mode Dropout, the
// ai.onnx.preview.training domain, string tensors); then nothing else is read.
// Sequences and optionals (SequenceProto / OptionalProto test data) are read as the VM
// passes them: a tuple of the elements, a tuple of zero or one value.
struct RawCase {
  std::string name;
  std::string model_bytes;
  std::vector<vm::Value> inputs;
  std::vector<vm::Value> outputs;
  std::string not_applicable;
  // Non-empty: an input or output this reader cannot read (a map, a sparse tensor); the
  // case counts as failed.
  std::string unreadable;
};
RawCase load_raw_case(const std::filesystem::path& dir);

// Whether `got` matches `want`: same dtype and shape; floats within atol + rtol * |want|
// (NaN matches NaN), everything else exactly. `why` says where it first differs.
bool tensors_match(const vm::Tensor& got, const vm::Tensor& want, double rtol, double atol,
                   std::string* why);
// Values: tensors as tensors_match; tuples (sequences, optionals) field by field.
bool values_match(const vm::Value& got, const vm::Value& want, double rtol, double atol,
                  std::string* why);

}  // namespace dynvm::conformance
