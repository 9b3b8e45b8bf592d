// cli/npy.hpp - a small reader and writer for NumPy .npy files holding float32 arrays.
//
// Only what the parity hooks need: little-endian float32 ('<f4'), C order, any rank. Anything else
// (another dtype, Fortran order, a truncated file) is refused with yolo12::InputError, whose message
// names the file and says what was found.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace yolo12_cli {

struct NpyArray {
  std::vector<std::size_t> shape;
  std::vector<float> data;  // row-major, product(shape) elements
};

// Reads a float32 C-order .npy file. Throws yolo12::InputError.
NpyArray read_npy_f32(const std::string& path);

// Writes data (product(shape) floats, row-major) as a version 1.0 '<f4' .npy file.
// Throws yolo12::InputError when the file cannot be written.
void write_npy_f32(const std::string& path, const std::vector<std::size_t>& shape, const float* data);

// "(1, 3, 640, 640)"
std::string shape_string(const std::vector<std::size_t>& shape);

}  // namespace yolo12_cli
