// trees.hpp: NCCL's double binary trees over n nodes, which NCCL's Tree algorithm uses across
// nodes (each node's GPUs form a chain inside it).
//
//   const auto trees = double_binary_tree(4);
//   trees[0][0].children[0] == 2;   // tree 0: 0 -> 2 -> {1, 3}
//   trees[1][3].children[0] == 1;   // tree 1 mirrors it: 3 -> 1 -> {2, 0}
#pragma once

#include <array>
#include <vector>

namespace gradsync {

// TreeNode is one node's place in a binary tree over nodes: parent and up to two children
// (-1 where absent).
struct TreeNode {
  int parent = -1;
  std::array<int, 2> children{-1, -1};
};

// double_binary_tree returns NCCL's two trees over n nodes (ncclGetDtree): tree 0 is a binary
// tree rooted at 0 in which every other node is a leaf; tree 1 mirrors it (n even) or shifts it
// by one (n odd), so that a node that is interior in one tree is a leaf in the other.
std::array<std::vector<TreeNode>, 2> double_binary_tree(int n);

}  // namespace gradsync
