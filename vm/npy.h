// NumPy .npy files: the format `vmrun` reads inputs from and writes outputs to, so that a
// model's tensors can be made and checked with NumPy (np.save / np.load).
//
// Reading accepts format versions 1.0, 2.0 and 3.0, every dtype that has a NumPy
// equivalent (dtype.h: to_numpy_descr / from_numpy_descr), little- or big-endian data
// (big-endian is byte-swapped on read), 0-d and empty arrays. Only C order: a
// Fortran-ordered file is refused rather than silently transposed. Nothing in a file is
// trusted: a malformed header, a shape whose size overflows or does not match the data,
// or truncated data gives a UserError of one line that names the file.
//
// Writing produces version 1.0 (2.0 only if the header would not fit), little-endian,
// C order, with the header padded so the data starts on a 64-byte boundary, as NumPy
// itself writes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vm/tensor.h"

namespace dynvm::vm {

// Reads a .npy file into a host tensor. Throws UserError naming `path`.
Tensor read_npy(const std::string& path);

// Parses the bytes of a .npy file. `name` is what error messages call the data.
Tensor parse_npy(std::span<const uint8_t> bytes, std::string_view name = "<memory>");

// The bytes of a .npy file holding `tensor` (a host tensor; others are copied to the
// host first). Throws UserError for a dtype NumPy has no type for (bfloat16).
std::vector<uint8_t> format_npy(const Tensor& tensor);

// Writes `tensor` to `path`. Throws UserError naming `path` when it cannot be written.
void write_npy(const Tensor& tensor, const std::string& path);

}  // namespace dynvm::vm
