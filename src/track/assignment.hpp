// track/assignment.hpp - matching tracks to detections: an optimal linear assignment with a cost
// limit, as Ultralytics' matching.linear_assignment gets it from lap.lapjv(extend_cost=True,
// cost_limit=limit).
//
// That call solves the (rows + cols) square problem in which every row and every column may stay
// unmatched at cost limit / 2. Its optimum is the matching that minimises the sum of (cost - limit)
// over the matched pairs, so only pairs with cost <= limit ever match, and groups of rows and columns
// that no such pair connects are independent problems. linear_assignment() solves each connected
// group on its own with min_cost_assignment() -- shortest augmenting paths with dual potentials
// (Jonker-Volgenant / Hungarian), O(n^2 m) -- which makes a frame of a real video (a handful of
// overlapping boxes per group) cost next to nothing. Optimal matchings that tie may differ from lap's.
#pragma once

#include <utility>
#include <vector>

namespace yolo12::track {

// Steps (inner-loop column visits) one group's exact solution may take, about 0.05 s; a group that
// needs more is matched greedily. A real video's groups need a few hundred; 1000 boxes that all
// overlap each other (and 1000 tracks) would need up to 1e9.
constexpr long long kAssignmentWorkLimit = 10'000'000;

struct Assignment {
  std::vector<std::pair<int, int>> matches;  // (row, col), in ascending row order
  std::vector<int> unmatched_rows;           // ascending
  std::vector<int> unmatched_cols;           // ascending
};

// cost: (rows, cols) row-major. A pair may match when cost <= limit (NaN never). A group whose exact
// solution would need more than work_limit steps is matched greedily instead: cheapest pair first
// (ties: lower row, then lower column), which is not always optimal.
Assignment linear_assignment(const std::vector<float>& cost, int rows, int cols, double limit,
                             long long work_limit = kAssignmentWorkLimit);

// The minimum-cost assignment of every row of a dense (n, m) matrix to distinct columns, n <= m,
// finite costs. Fills row_to_col (n,) and returns true; returns false after work_limit steps.
bool min_cost_assignment(const std::vector<double>& cost, int n, int m, long long work_limit,
                         std::vector<int>& row_to_col);

}  // namespace yolo12::track
