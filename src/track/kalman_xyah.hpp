// track/kalman_xyah.hpp - the constant-velocity Kalman filter ByteTrack runs on each box.
//
// State (8): x, y, a, h, vx, vy, va, vh -- box centre, aspect ratio w/h, height and their velocities
// per frame. Measurement (4): x, y, a, h. Noise is proportional to the height, with Ultralytics'
// weights (KalmanFilterXYAH): position 1/20, velocity 1/160, aspect 1e-2 / 1e-5 (process) and 1e-1
// (measurement). Everything is in double, as NumPy runs it.
#pragma once

#include <array>

namespace yolo12::track {

struct KalmanState {
  std::array<double, 8> mean{};  // (8,)  x y a h vx vy va vh
  std::array<double, 64> cov{};  // (8, 8) row-major
};

using Xyah = std::array<double, 4>;  // (4,)  x y a h

// A new state at the measurement, with zero velocity and height-scaled uncertainty.
KalmanState kalman_initiate(const Xyah& z);

// One frame ahead: mean += velocity, cov = F cov F^T + Q (Q from the height before the step).
void kalman_predict(KalmanState& s);

// Correct with a measurement. Returns false (and leaves s alone) when the innovation covariance is
// not positive definite, which only non-finite numbers can cause.
bool kalman_update(KalmanState& s, const Xyah& z);

}  // namespace yolo12::track
