#include "grammar/byte_trie.h"

#include <map>
#include <memory>

namespace brisk {
namespace {

struct BuildNode {
  std::map<uint8_t, std::unique_ptr<BuildNode>> kids;
  int32_t terminal = -1;
};

}  // namespace

ByteTrie::ByteTrie(const std::vector<std::string>& strings) {
  BuildNode root;
  for (size_t i = 0; i < strings.size(); ++i) {
    BuildNode* n = &root;
    for (char c : strings[i]) {
      auto& k = n->kids[static_cast<uint8_t>(c)];
      if (!k) k = std::make_unique<BuildNode>();
      n = k.get();
    }
    if (n->terminal < 0) n->terminal = static_cast<int32_t>(i);
  }
  // Breadth-first flattening: a node's edges are contiguous and its
  // children get consecutive ids.
  std::vector<const BuildNode*> order{&root};
  nodes_.clear();
  for (size_t i = 0; i < order.size(); ++i) {
    const BuildNode* b = order[i];
    Node n;
    n.terminal = b->terminal;
    n.first_edge = static_cast<uint32_t>(edge_bytes_.size());
    n.num_edges = static_cast<uint32_t>(b->kids.size());
    for (const auto& [byte, kid] : b->kids) {
      edge_bytes_.push_back(byte);
      edge_targets_.push_back(static_cast<uint32_t>(order.size()));
      order.push_back(kid.get());
    }
    nodes_.push_back(n);
  }
}

}  // namespace brisk
