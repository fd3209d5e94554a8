// A compiled JSON constraint: the plain data a JSON Schema (or "any JSON
// object") compiles to, and that GrammarMatcher (matcher.h) walks byte by
// byte. Nodes refer to each other by index, so recursive schemas ($ref to an
// enclosing schema) are cycles in the node graph, not infinite trees.
//
// Output shape the grammar fixes (documented choices, not JSON Schema rules):
//  - compact JSON: no whitespace anywhere (outside string contents);
//  - object members in the order of `properties`; optional ones may be left
//    out, and extra (additionalProperties) members come after all listed
//    ones, with keys that are none of the listed keys;
//  - strings with a pattern or format: the canonical form only (see
//    string_pattern.h);
//  - other strings: raw UTF-8 (well-formed, no overlong forms or surrogates),
//    escapes \" \\ \/ \b \f \n \r \t and \uXXXX except surrogates (emit the
//    character itself instead). Object keys are stricter ("canonical"): no
//    \/ and \u only for control characters, so that a key's text decides
//    which listed key it is;
//  - numbers per the JSON grammar; integers without fraction or exponent;
//    numbers with bounds without exponent.
//
// A tool-call grammar ({"name": <one of N>, "arguments": <that tool's
// schema>}) is a Union of N Objects whose "name" is a one-literal node: no
// new node kind is needed.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "grammar/byte_dfa.h"
#include "grammar/byte_trie.h"

namespace brisk {

inline constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

enum class NodeKind : uint8_t {
  kNever,     // matches nothing (the `false` schema)
  kString,    // "..." with a code point count in [min_len, max_len], or a pattern
  kNumber,    // JSON number, optionally integer-only and bounded
  kLiterals,  // one of a fixed set of JSON texts (enum, const, true/false/null)
  kObject,
  kArray,
  kUnion,  // any of `alts` (type arrays, anyOf, oneOf, $ref aliases)
};

struct NumberSpec {
  bool integer = false;
  bool has_lo = false, has_hi = false;
  bool lo_exclusive = false, hi_exclusive = false;
  double lo = 0, hi = 0;
  bool bounded() const { return has_lo || has_hi; }
};

struct ObjectSpec {
  // Listed properties in output order; key_text is the key's canonical JSON
  // string contents (no quotes).
  struct Property {
    std::string key_text;
    uint32_t value = kNoNode;
    bool required = false;
  };
  std::vector<Property> props;
  uint32_t additional = kNoNode;  // schema of extra members; kNoNode = none allowed
  // patternProperties with one pattern: extra keys whose canonical text
  // patterns[key_pattern] accepts take a value of pattern_value, the other
  // extra keys one of `additional` (if any). No listed key matches it (the
  // compiler reports the keyword otherwise).
  uint32_t key_pattern = kNoNode;
  uint32_t pattern_value = kNoNode;
  ByteTrie keys;  // key_text -> property index
  // minProperties / maxProperties: every member counts, listed or extra
  // (an extra key written twice counts twice; the compiler reports
  // minProperties where only such repeats could reach it).
  uint32_t min_props = 0;
  uint32_t max_props = kUnbounded;
  // first_required_from[p]: the first required property index >= p
  // (props.size() if none); size props.size() + 1.
  std::vector<uint32_t> first_required_from;
  // required_from[p]: how many properties at index >= p are required.
  std::vector<uint32_t> required_from;
  // MatchFrame::count saturates here: the largest count the bounds tell
  // apart (0 without bounds, so frames do not differ by count).
  uint32_t count_cap = 0;
  // Per key-trie node, a bitset over property indices of the keys below it
  // (words_per_node 64-bit words each).
  std::vector<uint64_t> subtree_keys;
  uint32_t words_per_node = 1;
};

struct ArraySpec {
  std::vector<uint32_t> prefix;  // prefixItems
  uint32_t items = kNoNode;      // items after the prefix; kNoNode = none allowed
  uint32_t min_items = 0;
  uint32_t max_items = kUnbounded;
  // Non-empty: a bare sequence, used only as the root: no brackets, the
  // items separated by these bytes (which must not be able to start an
  // item), the text ending where an item ends (min_items >= 1). Several
  // tool calls under tool_choice "auto" (server/openai_tools.h).
  std::string separator;
  // Non-zero: the text may also end after this many bytes of the separator
  // (its closing tag, when it is a closing tag and the next item's opening
  // one: "\n</tool_call>" of "\n</tool_call>\n<tool_call>\n").
  uint32_t separator_end = 0;
};

struct GrammarNode {
  NodeKind kind = NodeKind::kNever;
  uint32_t min_len = 0;           // kString
  uint32_t max_len = kUnbounded;  // kString
  // kString: the contents follow patterns[pattern] (min_len / max_len are
  // then already in the DFA); kNoNode: any contents.
  uint32_t pattern = kNoNode;
  uint32_t index = 0;          // kNumber/kLiterals/kObject/kArray: into the tables below
  std::vector<uint32_t> alts;  // kUnion
};

struct JsonGrammar {
  std::vector<GrammarNode> nodes;
  std::vector<NumberSpec> numbers;
  std::vector<ByteTrie> literals;  // each: the set of JSON texts of one kLiterals node
  std::vector<ObjectSpec> objects;
  std::vector<ArraySpec> arrays;
  std::vector<ByteDfa> patterns;  // string contents (string_pattern.h), each non-empty
  uint32_t root = kNoNode;

  // Builders used by the compiler; each returns the new node's index.
  uint32_t AddNode(GrammarNode n) {
    nodes.push_back(std::move(n));
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  uint32_t AddString(uint32_t min_len, uint32_t max_len);
  // A string whose contents `dfa` accepts (a non-empty DFA).
  uint32_t AddPatternString(ByteDfa dfa);
  // The DFA into `patterns` (its uid set): its index.
  uint32_t AddPattern(ByteDfa dfa);
  uint32_t AddNumber(const NumberSpec& spec);
  uint32_t AddLiterals(const std::vector<std::string>& texts);
  uint32_t AddUnion(std::vector<uint32_t> alts);
  // Fills the derived fields (trie, first_required_from, subtree_keys).
  uint32_t AddObject(ObjectSpec spec);
  uint32_t AddArray(ArraySpec spec);
  // Any JSON value (objects with any keys, arrays of anything), built once.
  uint32_t AnyValue();
  // Any JSON object ({"type": "json_object"} mode).
  uint32_t AnyObject();

 private:
  uint32_t any_value_ = kNoNode;
  uint32_t any_object_ = kNoNode;
};

// `s` as the contents of a canonical JSON string (the grammar's key form):
// \" \\ \b \f \n \r \t, other control characters as \u00xx, the rest raw.
std::string CanonicalJsonStringContents(const std::string& s);

}  // namespace brisk
