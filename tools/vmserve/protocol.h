// The KServe v2 / Open Inference Protocol's inference messages, as dynvm reads and writes
// them: an infer request (JSON tensors, or the binary tensor extension: a JSON header of
// `Inference-Header-Content-Length` bytes followed by raw little-endian tensor data,
// `parameters.binary_data_size` bytes per input) becomes named host tensors, and a
// model's outputs become a JSON or binary response. Nothing here knows about models:
// the served model checks names, dtypes, ranks and dim ranges against its signature.
//
// Every malformed message is an HttpError(400) with one line that names what is wrong;
// the sizes a message declares are checked against the bytes it carries before anything
// is allocated, so a huge declared shape costs nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vm/dtype.h"
#include "vm/tensor.h"

namespace dynvm::serve {

// An answer other than 200: its HTTP status and a one-line message (the body's "error").
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// The protocol's datatype names: "FP32", "INT64", "BOOL", ...; nullopt for dtypes it
// has no name for (complex).
std::optional<std::string_view> datatype_name(vm::DType t);
std::optional<vm::DType> parse_datatype(std::string_view name);

struct NamedTensor {
  std::string name;
  vm::Tensor tensor;
};

struct InferRequest {
  std::string id;  // echoed in the response
  std::vector<NamedTensor> inputs;
  // The outputs asked for, in the order asked; empty: all of the model's.
  std::vector<std::string> outputs;
  // Outputs to send as binary data: all (binary_data_output) or those named.
  bool all_binary = false;
  std::set<std::string> binary_outputs;
  // parameters.timeout, in microseconds (as Triton spells it), if the request set one.
  std::optional<int64_t> timeout_us;
};

// `body` is the whole request body; `header_length` the value of
// Inference-Header-Content-Length, when the request had that header.
InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length);

struct InferResponse {
  std::string body;
  std::string content_type;
  // Set when the body carries binary data after the JSON header.
  std::optional<size_t> header_length;
};

InferResponse encode_infer_response(std::string_view model_name, const InferRequest& request,
                                    const std::vector<NamedTensor>& outputs);

// {"error": message}, on one line.
std::string error_body(std::string_view message);

}  // namespace dynvm::serve
