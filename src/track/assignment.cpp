// track/assignment.cpp - see assignment.hpp.
#include "track/assignment.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <tuple>

namespace yolo12::track {

bool min_cost_assignment(const std::vector<double>& cost, int n, int m, long long work_limit,
                         std::vector<int>& row_to_col) {
  // Shortest augmenting paths with potentials u (rows) and v (columns); index 0 is a virtual
  // column/row that starts each search. col_row[j]: the row (1-based) holding column j, 0 = free.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0), v(m + 1, 0), min_reduced(m + 1);
  std::vector<int> col_row(m + 1, 0), prev_col(m + 1, 0);
  std::vector<char> visited(m + 1);
  long long work = 0;
  for (int i = 1; i <= n; ++i) {
    col_row[0] = i;
    int j0 = 0;
    std::fill(min_reduced.begin(), min_reduced.end(), inf);
    std::fill(visited.begin(), visited.end(), 0);
    do {  // grow the tree of tight edges from row i until it reaches a free column
      visited[j0] = 1;
      const int i0 = col_row[j0];
      const double* row = &cost[static_cast<std::size_t>(i0 - 1) * m];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= m; ++j) {
        if (visited[j]) continue;
        const double reduced = row[j - 1] - u[i0] - v[j];
        if (reduced < min_reduced[j]) {
          min_reduced[j] = reduced;
          prev_col[j] = j0;
        }
        if (min_reduced[j] < delta) {
          delta = min_reduced[j];
          j1 = j;
        }
      }
      work += m;
      if (work > work_limit || j1 == 0) return false;
      for (int j = 0; j <= m; ++j) {
        if (visited[j]) {
          u[col_row[j]] += delta;
          v[j] -= delta;
        } else {
          min_reduced[j] -= delta;
        }
      }
      j0 = j1;
    } while (col_row[j0] != 0);
    do {  // flip the path back to the root
      const int j1 = prev_col[j0];
      col_row[j0] = col_row[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  row_to_col.assign(n, -1);
  for (int j = 1; j <= m; ++j)
    if (col_row[j] != 0) row_to_col[col_row[j] - 1] = j - 1;
  return true;
}

namespace {

struct DisjointSets {
  std::vector<int> parent;
  explicit DisjointSets(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

// One connected group: its rows and columns of the full matrix, ascending.
struct Group {
  std::vector<int> rows, cols;
};

// Matches of one group, exactly when the work allows, else greedily.
void solve_group(const std::vector<float>& cost, int cols, double limit, long long work_limit,
                 const Group& g, std::vector<std::pair<int, int>>& matches) {
  auto c = [&](int r, int k) { return cost[static_cast<std::size_t>(r) * cols + k]; };
  auto allowed = [&](float x) { return static_cast<double>(x) <= limit; };

  // Rectangular problem with the smaller side as rows; each row also gets one dummy column of
  // cost 0 (stay unmatched). A real pair costs cost - limit (<= 0) when allowed and +1 when not, so
  // an optimum never uses a pair that is not allowed.
  const bool transpose = g.rows.size() > g.cols.size();
  const std::vector<int>& a = transpose ? g.cols : g.rows;
  const std::vector<int>& b = transpose ? g.rows : g.cols;
  const int n = static_cast<int>(a.size());
  const int m_real = static_cast<int>(b.size());
  const int m = m_real + n;
  const long long steps_at_least = static_cast<long long>(n) * m;
  if (steps_at_least <= work_limit) {
    std::vector<double> dense(static_cast<std::size_t>(n) * m, 0.0);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < m_real; ++k) {
        const float x = transpose ? c(b[k], a[i]) : c(a[i], b[k]);
        dense[static_cast<std::size_t>(i) * m + k] = allowed(x) ? static_cast<double>(x) - limit : 1.0;
      }
    std::vector<int> row_to_col;
    if (min_cost_assignment(dense, n, m, work_limit, row_to_col)) {
      for (int i = 0; i < n; ++i) {
        const int k = row_to_col[i];
        if (k < 0 || k >= m_real) continue;
        const float x = transpose ? c(b[k], a[i]) : c(a[i], b[k]);
        if (!allowed(x)) continue;
        matches.emplace_back(transpose ? b[k] : a[i], transpose ? a[i] : b[k]);
      }
      return;
    }
  }
  // Greedy: every allowed pair of the group, cheapest first.
  std::vector<std::tuple<float, int, int>> pairs;
  for (int r : g.rows)
    for (int k : g.cols)
      if (allowed(c(r, k))) pairs.emplace_back(c(r, k), r, k);
  std::sort(pairs.begin(), pairs.end());
  std::vector<char> row_used(g.rows.empty() ? 0 : g.rows.back() + 1), col_used(g.cols.empty() ? 0 : g.cols.back() + 1);
  for (const auto& [x, r, k] : pairs) {
    if (row_used[r] || col_used[k]) continue;
    row_used[r] = col_used[k] = 1;
    matches.emplace_back(r, k);
  }
}

}  // namespace

Assignment linear_assignment(const std::vector<float>& cost, int rows, int cols, double limit,
                             long long work_limit) {
  // Groups: connected components of the graph whose edges are the pairs that may match.
  DisjointSets sets(rows + cols);  // rows 0..rows-1, then columns
  std::vector<char> row_edge(rows, 0), col_edge(cols, 0);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k)
      if (static_cast<double>(cost[static_cast<std::size_t>(r) * cols + k]) <= limit) {
        sets.join(r, rows + k);
        row_edge[r] = col_edge[k] = 1;
      }
  std::vector<int> group_of(rows + cols, -1);
  std::vector<Group> groups;
  auto group_for = [&](int node) -> Group& {
    const int root = sets.find(node);
    if (group_of[root] < 0) {
      group_of[root] = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    return groups[group_of[root]];
  };
  for (int r = 0; r < rows; ++r)
    if (row_edge[r]) group_for(r).rows.push_back(r);
  for (int k = 0; k < cols; ++k)
    if (col_edge[k]) group_for(rows + k).cols.push_back(k);

  Assignment out;
  for (const Group& g : groups) solve_group(cost, cols, limit, work_limit, g, out.matches);
  std::sort(out.matches.begin(), out.matches.end());
  std::vector<char> row_matched(rows, 0), col_matched(cols, 0);
  for (const auto& [r, k] : out.matches) row_matched[r] = col_matched[k] = 1;
  for (int r = 0; r < rows; ++r)
    if (!row_matched[r]) out.unmatched_rows.push_back(r);
  for (int k = 0; k < cols; ++k)
    if (!col_matched[k]) out.unmatched_cols.push_back(k);
  return out;
}

}  // namespace yolo12::track
