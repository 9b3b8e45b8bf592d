// track/kalman_xyah.cpp - see kalman_xyah.hpp. The formulas follow Ultralytics' KalmanFilterXYAH
// term by term (same noise terms, same order of the matrix products) so that the boxes agree to
// rounding; the 4x4 solve is a Cholesky factorisation instead of LAPACK's LU.
#include "track/kalman_xyah.hpp"

#include <cmath>

namespace yolo12::track {

namespace {

constexpr double kStdPosition = 1.0 / 20;   // position noise per unit of height
constexpr double kStdVelocity = 1.0 / 160;  // velocity noise per unit of height

double& at(std::array<double, 64>& m, int r, int c) { return m[r * 8 + c]; }

}  // namespace

KalmanState kalman_initiate(const Xyah& z) {
  KalmanState s;
  for (int i = 0; i < 4; ++i) s.mean[i] = z[i];
  const double h = z[3];
  const double sd[8] = {2 * kStdPosition * h,  2 * kStdPosition * h,  1e-2, 2 * kStdPosition * h,
                         10 * kStdVelocity * h, 10 * kStdVelocity * h, 1e-5, 10 * kStdVelocity * h};
  for (int i = 0; i < 8; ++i) at(s.cov, i, i) = sd[i] * sd[i];
  return s;
}

void kalman_predict(KalmanState& s) {
  const double h = s.mean[3];
  const double sd[8] = {kStdPosition * h, kStdPosition * h, 1e-2, kStdPosition * h,
                         kStdVelocity * h, kStdVelocity * h, 1e-5, kStdVelocity * h};
  // F = [[I, I], [0, I]]: F P adds row i + 4 to row i, (F P) F^T adds column j + 4 to column j.
  std::array<double, 64> fp = s.cov;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) at(fp, r, c) = at(s.cov, r, c) + at(s.cov, r + 4, c);
  std::array<double, 64> fpf = fp;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c) at(fpf, r, c) = at(fp, r, c) + at(fp, r, c + 4);
  for (int i = 0; i < 8; ++i) at(fpf, i, i) += sd[i] * sd[i];
  s.cov = fpf;
  for (int i = 0; i < 4; ++i) s.mean[i] += s.mean[i + 4];
}

bool kalman_update(KalmanState& s, const Xyah& z) {
  const double h = s.mean[3];
  const double r_std[4] = {kStdPosition * h, kStdPosition * h, 1e-1, kStdPosition * h};
  // S = H P H^T + R (4, 4), the innovation covariance.
  double S[4][4];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) S[r][c] = at(s.cov, r, c);
  for (int i = 0; i < 4; ++i) S[i][i] += r_std[i] * r_std[i];

  // Cholesky S = L L^T.
  double L[4][4] = {};
  for (int j = 0; j < 4; ++j) {
    double d = S[j][j];
    for (int k = 0; k < j; ++k) d -= L[j][k] * L[j][k];
    if (!(d > 0) || !std::isfinite(d)) return false;
    L[j][j] = std::sqrt(d);
    for (int i = j + 1; i < 4; ++i) {
      double v = S[i][j];
      for (int k = 0; k < j; ++k) v -= L[i][k] * L[j][k];
      L[i][j] = v / L[j][j];
    }
  }
  // Kalman gain K (8, 4) = P H^T S^-1: row i of K solves S k = P[0:4, i] (P is symmetric).
  double K[8][4];
  for (int i = 0; i < 8; ++i) {
    double y[4];
    for (int r = 0; r < 4; ++r) {
      double v = at(s.cov, r, i);
      for (int k = 0; k < r; ++k) v -= L[r][k] * y[k];
      y[r] = v / L[r][r];
    }
    for (int r = 3; r >= 0; --r) {
      double v = y[r];
      for (int k = r + 1; k < 4; ++k) v -= L[k][r] * K[i][k];
      K[i][r] = v / L[r][r];
    }
  }
  double innovation[4];
  for (int k = 0; k < 4; ++k) innovation[k] = z[k] - s.mean[k];

  KalmanState out = s;
  for (int i = 0; i < 8; ++i) {
    double v = 0;
    for (int k = 0; k < 4; ++k) v += innovation[k] * K[i][k];
    out.mean[i] = s.mean[i] + v;
  }
  // P - K S K^T, as (K S) K^T.
  double KS[8][4];
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < 4; ++c) {
      double v = 0;
      for (int k = 0; k < 4; ++k) v += K[i][k] * S[k][c];
      KS[i][c] = v;
    }
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      double v = 0;
      for (int k = 0; k < 4; ++k) v += KS[r][k] * K[c][k];
      at(out.cov, r, c) = at(s.cov, r, c) - v;
    }
  for (double v : out.mean)
    if (!std::isfinite(v)) return false;
  s = out;
  return true;
}

}  // namespace yolo12::track
