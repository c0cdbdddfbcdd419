// trees.cpp: NCCL's binary and double binary trees (src/graph/trees.cc: ncclGetBtree,
// ncclGetDtree), rewritten from their description.
#include "topologies/trees.hpp"

namespace gradsync {
namespace {

// btree: rank r's place in a tree rooted at 0 where, looking at r's lowest set bit, the parent
// clears it and sets the next one (or just clears it when that is out of range), and the
// children are r -/+ half that bit (the + child halving until it is in range).
TreeNode btree(int n, int r) {
  TreeNode t;
  int bit = 1;
  while (bit < n && (bit & r) == 0) bit <<= 1;
  if (r == 0) {
    t.children[0] = n > 1 ? bit >> 1 : -1;
    return t;
  }
  int up = (r ^ bit) | (bit << 1);
  if (up >= n) up = r ^ bit;
  t.parent = up;
  int low = bit >> 1;
  t.children[0] = low == 0 ? -1 : r - low;
  while (low > 0 && r + low >= n) low >>= 1;
  t.children[1] = low == 0 ? -1 : r + low;
  return t;
}

}  // namespace

std::array<std::vector<TreeNode>, 2> double_binary_tree(int n) {
  std::array<std::vector<TreeNode>, 2> trees;
  for (int r = 0; r < n; ++r) trees[0].push_back(btree(n, r));
  const auto map = [&](int x, auto f) { return x < 0 ? -1 : f(x); };
  for (int r = 0; r < n; ++r) {
    TreeNode t;
    if (n % 2 == 1) {
      const auto shift = [n](int x) { return (x + 1) % n; };
      const TreeNode b = btree(n, (r - 1 + n) % n);
      t.parent = map(b.parent, shift);
      t.children = {map(b.children[0], shift), map(b.children[1], shift)};
    } else {
      const auto mirror = [n](int x) { return n - 1 - x; };
      const TreeNode b = btree(n, n - 1 - r);
      t.parent = map(b.parent, mirror);
      t.children = {map(b.children[0], mirror), map(b.children[1], mirror)};
    }
    trees[1].push_back(t);
  }
  return trees;
}

}  // namespace gradsync
