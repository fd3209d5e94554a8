#include "grammar/json_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace brisk {

uint32_t JsonGrammar::AddString(uint32_t min_len, uint32_t max_len) {
  GrammarNode n;
  n.kind = NodeKind::kString;
  n.min_len = min_len;
  n.max_len = max_len;
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddPattern(ByteDfa dfa) {
  static std::atomic<uint64_t> next_uid{1};
  dfa.uid = next_uid.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t c : dfa.chars_to_accept)
    dfa.max_chars_to_accept = std::max(dfa.max_chars_to_accept, c);
  patterns.push_back(std::move(dfa));
  return static_cast<uint32_t>(patterns.size() - 1);
}

uint32_t JsonGrammar::AddPatternString(ByteDfa dfa) {
  GrammarNode n;
  n.kind = NodeKind::kString;
  n.pattern = AddPattern(std::move(dfa));
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddNumber(const NumberSpec& spec) {
  numbers.push_back(spec);
  GrammarNode n;
  n.kind = NodeKind::kNumber;
  n.index = static_cast<uint32_t>(numbers.size() - 1);
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddLiterals(const std::vector<std::string>& texts) {
  if (texts.empty()) return AddNode({});  // kNever
  literals.emplace_back(texts);
  GrammarNode n;
  n.kind = NodeKind::kLiterals;
  n.index = static_cast<uint32_t>(literals.size() - 1);
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddUnion(std::vector<uint32_t> alts) {
  GrammarNode n;
  n.kind = NodeKind::kUnion;
  n.alts = std::move(alts);
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddObject(ObjectSpec spec) {
  const size_t np = spec.props.size();
  std::vector<std::string> keys;
  keys.reserve(np);
  for (const auto& p : spec.props) keys.push_back(p.key_text);
  spec.keys = ByteTrie(keys);
  spec.first_required_from.assign(np + 1, static_cast<uint32_t>(np));
  for (size_t p = np; p-- > 0;)
    spec.first_required_from[p] =
        spec.props[p].required ? static_cast<uint32_t>(p) : spec.first_required_from[p + 1];
  spec.required_from.assign(np + 1, 0);
  for (size_t p = np; p-- > 0;)
    spec.required_from[p] = spec.required_from[p + 1] + (spec.props[p].required ? 1 : 0);
  spec.count_cap = std::max(spec.min_props, spec.max_props == kUnbounded ? 0 : spec.max_props);
  // Key bitsets per trie node: set at the terminal, then OR-ed into the
  // parents (children always have larger ids than their parent).
  const uint32_t words = static_cast<uint32_t>(std::max<size_t>(1, (np + 63) / 64));
  spec.words_per_node = words;
  spec.subtree_keys.assign(size_t{spec.keys.size()} * words, 0);
  std::vector<uint32_t> parent(spec.keys.size(), ByteTrie::kNone);
  spec.keys.ForEachEdge([&](uint32_t from, uint32_t to) { parent[to] = from; });
  for (uint32_t t = 0; t < spec.keys.size(); ++t) {
    const int32_t k = spec.keys.Terminal(t);
    if (k >= 0) spec.subtree_keys[size_t{t} * words + k / 64] |= uint64_t{1} << (k % 64);
  }
  for (uint32_t t = spec.keys.size(); t-- > 1;)
    for (uint32_t w = 0; w < words; ++w)
      spec.subtree_keys[size_t{parent[t]} * words + w] |= spec.subtree_keys[size_t{t} * words + w];
  objects.push_back(std::move(spec));
  GrammarNode n;
  n.kind = NodeKind::kObject;
  n.index = static_cast<uint32_t>(objects.size() - 1);
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AddArray(ArraySpec spec) {
  arrays.push_back(std::move(spec));
  GrammarNode n;
  n.kind = NodeKind::kArray;
  n.index = static_cast<uint32_t>(arrays.size() - 1);
  return AddNode(std::move(n));
}

uint32_t JsonGrammar::AnyValue() {
  if (any_value_ != kNoNode) return any_value_;
  // Reserve the union first: the object and array below refer back to it.
  any_value_ = AddUnion({});
  ObjectSpec obj;
  obj.additional = any_value_;
  const uint32_t o = AddObject(std::move(obj));
  ArraySpec arr;
  arr.items = any_value_;
  const uint32_t a = AddArray(std::move(arr));
  const uint32_t s = AddString(0, kUnbounded);
  const uint32_t num = AddNumber({});
  const uint32_t lit = AddLiterals({"true", "false", "null"});
  nodes[any_value_].alts = {o, a, s, num, lit};
  return any_value_;
}

uint32_t JsonGrammar::AnyObject() {
  if (any_object_ != kNoNode) return any_object_;
  ObjectSpec obj;
  obj.additional = AnyValue();
  any_object_ = AddObject(std::move(obj));
  return any_object_;
}

std::string CanonicalJsonStringContents(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace brisk
