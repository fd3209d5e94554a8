// A small immutable trie over byte strings (enum literals, object keys):
// node 0 is the root; each node has sorted out-edges and an optional
// terminal id (the index of the string that ends there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace brisk {

class ByteTrie {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  ByteTrie() { nodes_.push_back({}); }
  // Builds the trie of `strings`; string i gets terminal id i (the first one
  // wins on duplicates).
  explicit ByteTrie(const std::vector<std::string>& strings);

  // The child of `node` on `byte`, or kNone.
  uint32_t Child(uint32_t node, uint8_t byte) const {
    const Node& n = nodes_[node];
    for (uint32_t e = n.first_edge; e < n.first_edge + n.num_edges; ++e)
      if (edge_bytes_[e] == byte) return edge_targets_[e];
    return kNone;
  }
  bool HasChildren(uint32_t node) const { return nodes_[node].num_edges != 0; }
  // The id of the string ending at `node`, or -1.
  int32_t Terminal(uint32_t node) const { return nodes_[node].terminal; }
  uint32_t size() const { return static_cast<uint32_t>(nodes_.size()); }
  // Visits every (node, parent) pair in build order (parents first).
  template <typename F>
  void ForEachEdge(F&& f) const {
    for (uint32_t n = 0; n < nodes_.size(); ++n)
      for (uint32_t e = nodes_[n].first_edge; e < nodes_[n].first_edge + nodes_[n].num_edges; ++e)
        f(n, edge_targets_[e]);
  }

 private:
  struct Node {
    uint32_t first_edge = 0;
    uint32_t num_edges = 0;
    int32_t terminal = -1;
  };
  std::vector<Node> nodes_;
  std::vector<uint8_t> edge_bytes_;
  std::vector<uint32_t> edge_targets_;
};

}  // namespace brisk
