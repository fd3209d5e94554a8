#include "grammar/string_pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "grammar/cfg.h"
#include "grammar/regex_parser.h"

namespace brisk {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// The regex as a tree of code-point-level nodes (the builder regex_parser.h
// drives): the NFA is built from it with each repetition expanded in place.
struct RegexNode {
  enum class Kind : uint8_t { kAlt, kSeq, kClass, kRepeat };
  Kind kind = Kind::kSeq;
  std::vector<uint32_t> kids;  // kAlt: alternatives; kSeq: parts; kRepeat: {x}
  Ranges ranges;               // kClass: sorted, merged, no surrogates
  int64_t min = 0, max = 0;    // kRepeat (max < 0: unbounded)
};

struct RegexTree {
  std::vector<RegexNode> nodes;
  uint32_t root = 0;
};

class TreeBuilder {
 public:
  uint32_t NewRule(const std::string&) { return Add({RegexNode::Kind::kAlt, {}, {}, 0, 0}); }
  void AddAlt(uint32_t rule, std::vector<uint32_t> syms) {
    const uint32_t seq = Group(std::move(syms));
    nodes_[rule].kids.push_back(seq);
  }
  uint32_t CodePointClass(Ranges ranges, bool negate) {
    std::sort(ranges.begin(), ranges.end());
    Ranges merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    if (negate) merged = regex_parser::Complement(merged);
    return Add({RegexNode::Kind::kClass, {}, std::move(merged), 0, 0});
  }
  void AppendLiteral(std::string_view bytes, std::vector<uint32_t>* seq) {
    uint32_t cp = 0;
    for (size_t i = 0; i < bytes.size();) {
      const size_t n = DecodeUtf8Char(bytes, i, &cp);
      if (n == 0) return Fail(InvalidArgument("regex: invalid UTF-8 in a literal"));
      seq->push_back(CodePointClass({{cp, cp}}, false));
      i += n;
    }
  }
  uint32_t Star(uint32_t x) { return Repeat(x, 0, -1); }
  uint32_t Plus(uint32_t x) { return Repeat(x, 1, -1); }
  uint32_t Optional(uint32_t x) { return Repeat(x, 0, 1); }
  uint32_t Repeat(uint32_t x, int64_t min, int64_t max) {
    return Add({RegexNode::Kind::kRepeat, {x}, {}, min, max});
  }
  uint32_t Group(std::vector<uint32_t> seq) {
    return Add({RegexNode::Kind::kSeq, std::move(seq), {}, 0, 0});
  }
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }
  Expected<RegexTree> Finish(uint32_t root) {
    if (!error_.ok()) return error_;
    return RegexTree{std::move(nodes_), root};
  }

 private:
  uint32_t Add(RegexNode n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  std::vector<RegexNode> nodes_;
  Status error_;
};

// The canonical JSON escape of an ASCII character that needs one, or "".
std::string JsonEscape(uint32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return c < 0x20 ? fmt::format("\\u{:04x}", c) : std::string();
  }
}

// Thompson's construction over the JSON text of each character.
class NfaBuilder {
 public:
  explicit NfaBuilder(const RegexTree& tree) : t_(tree) {}

  Expected<ByteNfa> Run() {
    nfa_.start = nfa_.AddState();
    nfa_.accept = Emit(t_.root, nfa_.start, 0);
    if (too_large_)
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("the pattern expands past {} automaton states", kMaxNfaStates));
    return std::move(nfa_);
  }

 private:
  uint32_t New() {
    if (nfa_.size() >= kMaxNfaStates) too_large_ = true;
    return too_large_ ? 0 : nfa_.AddState();
  }

  // Adds the fragment for node `id` starting at state `in`; returns its
  // end state.
  uint32_t Emit(uint32_t id, uint32_t in, int depth) {
    if (too_large_ || depth > 4 * kMaxCfgNesting) {
      too_large_ = true;
      return in;
    }
    const RegexNode& n = t_.nodes[id];
    switch (n.kind) {
      case RegexNode::Kind::kSeq:
        for (uint32_t k : n.kids) in = Emit(k, in, depth + 1);
        return in;
      case RegexNode::Kind::kAlt: {
        const uint32_t out = New();
        for (uint32_t k : n.kids) {
          const uint32_t entry = New();
          if (too_large_) return in;
          nfa_.AddEps(in, entry);
          nfa_.AddEps(Emit(k, entry, depth + 1), out);
        }
        return out;
      }
      case RegexNode::Kind::kClass: {
        const uint32_t out = New();
        if (!too_large_) EmitClass(n.ranges, in, out);
        return out;
      }
      case RegexNode::Kind::kRepeat: {
        const uint32_t x = n.kids[0];
        for (int64_t i = 0; i < n.min && !too_large_; ++i) in = Emit(x, in, depth + 1);
        if (n.max < 0) {
          const uint32_t loop = New();
          if (too_large_) return in;
          nfa_.AddEps(in, loop);
          nfa_.AddEps(Emit(x, loop, depth + 1), loop);
          return loop;
        }
        const uint32_t out = New();
        for (int64_t i = n.min; i < n.max && !too_large_; ++i) {
          nfa_.AddEps(in, out);
          const uint32_t entry = New();
          if (too_large_) return in;
          nfa_.AddEps(in, entry);
          in = Emit(x, entry, depth + 1);
        }
        nfa_.AddEps(in, out);
        return out;
      }
    }
    return in;
  }

  // Edges from `in` to `out` over the JSON text of every code point in
  // `ranges`: raw bytes, or the escape when JSON needs one.
  void EmitClass(const Ranges& ranges, uint32_t in, uint32_t out) {
    // Escapes share a trie below one '\' edge.
    uint32_t esc_root = kDfaDead;
    std::map<std::pair<uint32_t, uint8_t>, uint32_t> trie;
    const auto escape = [&](const std::string& e) {
      if (esc_root == kDfaDead) {
        esc_root = New();
        if (too_large_) return;
        nfa_.AddEdge(in, '\\', '\\', esc_root);
      }
      uint32_t at = esc_root;
      for (size_t i = 1; i + 1 < e.size(); ++i) {
        const auto key = std::make_pair(at, static_cast<uint8_t>(e[i]));
        auto it = trie.find(key);
        if (it == trie.end()) {
          const uint32_t s = New();
          if (too_large_) return;
          nfa_.AddEdge(at, key.second, key.second, s);
          it = trie.emplace(key, s).first;
        }
        at = it->second;
      }
      const auto last = static_cast<uint8_t>(e.back());
      nfa_.AddEdge(at, last, last, out);
    };
    std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
    for (const auto& [lo, hi] : ranges) {
      // ASCII: runs of raw bytes split around the characters JSON escapes.
      for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x7F) && !too_large_;) {
        if (!JsonEscape(c).empty()) {
          escape(JsonEscape(c));
          ++c;
          continue;
        }
        uint32_t end = c;
        while (end + 1 <= std::min<uint32_t>(hi, 0x7F) && JsonEscape(end + 1).empty()) ++end;
        nfa_.AddEdge(in, static_cast<uint8_t>(c), static_cast<uint8_t>(end), out);
        c = end + 1;
      }
      if (hi >= 0x80) Utf8RangeSequences(std::max<uint32_t>(lo, 0x80), hi, &seqs);
    }
    for (const auto& seq : seqs) {
      uint32_t at = in;
      for (size_t i = 0; i < seq.size() && !too_large_; ++i) {
        const uint32_t to = i + 1 == seq.size() ? out : New();
        if (too_large_) return;
        nfa_.AddEdge(at, seq[i].first, seq[i].second, to);
        at = to;
      }
    }
  }

  const RegexTree& t_;
  ByteNfa nfa_;
  bool too_large_ = false;
};

// Walks `p` at nesting depth 0 (outside groups and classes, escapes
// skipped): calls at(i) for each such byte; returns false on unbalanced
// parentheses.
template <class At>
bool ScanTopLevel(std::string_view p, At at) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      if (depth == 0) at(i);
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // a leading ']' is a member
    } else if (c == '(') {
      if (depth++ == 0) at(i);
    } else if (c == ')') {
      if (--depth < 0) return false;
      if (depth == 0) at(i);
    } else if (depth == 0) {
      at(i);
    }
  }
  return depth == 0 && !in_class;
}

// The contents of `b` if the whole of it is one capturing or (?:) group.
std::optional<std::string_view> GroupBody(std::string_view b) {
  if (!b.starts_with('(') || !b.ends_with(')')) return std::nullopt;
  int top = 0;  // top-level positions: exactly the two parentheses
  if (!ScanTopLevel(b, [&](size_t) { ++top; }) || top != 2) return std::nullopt;
  std::string_view body = b.substr(1, b.size() - 2);
  if (body.starts_with("?:")) return body.substr(2);
  if (body.starts_with("?P<") ||
      (body.starts_with("?<") && body.size() > 2 && body[2] != '=' && body[2] != '!')) {
    const size_t close = body.find('>');
    if (close == std::string_view::npos) return std::nullopt;
    return body.substr(close + 1);
  }
  if (body.starts_with('?')) return std::nullopt;  // lookaround, flags: the parser decides
  return body;
}

// The top-level branches of `p`, sorted by their anchors (index: 2 if
// anchored at the start, + 1 at the end). A branch that is one group is
// opened up, its own branches taking the anchors around it.
void CollectBranches(std::string_view p, bool at_start, bool at_end, int depth,
                     std::array<std::vector<std::string>, 4>* out) {
  std::vector<size_t> bars;
  ScanTopLevel(p, [&](size_t i) {
    if (p[i] == '|') bars.push_back(i);
  });
  bars.push_back(p.size());
  size_t begin = 0;
  for (size_t bar : bars) {
    std::string_view b = p.substr(begin, bar - begin);
    begin = bar + 1;
    bool s = at_start, e = at_end;
    if (b.starts_with('^')) s = true, b.remove_prefix(1);
    size_t slashes = 0;
    while (b.size() >= 2 + slashes && b[b.size() - 2 - slashes] == '\\') ++slashes;
    if (b.ends_with('$') && slashes % 2 == 0) e = true, b.remove_suffix(1);
    if (depth < kMaxCfgNesting)
      if (auto body = GroupBody(b)) {
        CollectBranches(*body, s, e, depth + 1, out);
        continue;
      }
    (*out)[(s ? 2 : 0) + (e ? 1 : 0)].emplace_back(b);
  }
}

// `pattern` (search semantics) as a full-match pattern: its branches keep
// their anchors by dropping them and gain "any text" on each side they are
// not anchored. Branches with the same anchors share that text (one
// "[\s\S]*(?:a|b)" rather than "[\s\S]*a|[\s\S]*b", whose automaton would
// track every branch that has matched).
std::string SearchAsFullMatch(std::string_view p) {
  std::array<std::vector<std::string>, 4> branches;
  CollectBranches(p, false, false, 0, &branches);
  std::string out;
  for (int k = 0; k < 4; ++k) {
    if (branches[k].empty()) continue;
    if (!out.empty()) out += '|';
    out += (k & 2) ? "(?:" : "[\\s\\S]*(?:";
    for (size_t i = 0; i < branches[k].size(); ++i) out += (i ? "|" : "") + branches[k][i];
    out += (k & 1) ? ")" : ")[\\s\\S]*";
  }
  return out;
}

}  // namespace

Expected<ByteDfa> CompilePatternDfa(std::string_view pattern) {
  const std::string full = SearchAsFullMatch(pattern);
  auto tree = regex_parser::RegexParser<TreeBuilder>(full, {.ecma = true}).Run();
  if (!tree.ok()) return tree.status();
  auto nfa = NfaBuilder(*tree).Run();
  if (!nfa.ok()) return nfa.status();
  return Determinize(*nfa);
}

namespace {

// RFC 3339 full-date: days per month, February 29 in leap years only.
constexpr const char* kDate =
    R"((?:\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30))"
    R"(|02-(?:0[1-9]|1\d|2[0-8]))|(?:\d\d(?:0[48]|[2468][048]|[13579][26]))"
    R"(|(?:0[48]|[2468][048]|[13579][26])00)-02-29))";
// RFC 3339 full-time: partial-time and a required offset (leap second 60 as the RFC's grammar).
constexpr const char* kTime =
    R"((?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d))";
// RFC 1123 labels: letters, digits and inner hyphens, at most 63 each.
constexpr const char* kHostname =
    R"((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)";
constexpr const char* kIpv4 =
    R"((?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";

// RFC 3986's IPv6address (no zone id): the nine forms of "::" compression.
std::string Ipv6() {
  const std::string h = "[0-9A-Fa-f]{1,4}";
  const std::string ls32 = fmt::format("(?:{0}:{0}|{1})", h, kIpv4);
  std::vector<std::string> forms = {fmt::format("(?:{}:){{6}}{}", h, ls32)};
  for (int j = 1; j <= 8; ++j) {
    std::string before = j == 1 ? "" : fmt::format("(?:(?:{0}:){{0,{1}}}{0})?", h, j - 2);
    std::string after = j <= 6 ? fmt::format("(?:{}:){{{}}}{}", h, 6 - j, ls32) : j == 7 ? h : "";
    forms.push_back(before + "::" + after);
  }
  std::string out = "(?:";
  for (size_t i = 0; i < forms.size(); ++i) out += (i ? "|" : "") + forms[i];
  return out + ")";
}

// RFC 3986 URI (scheme ":" hier-part ["?" query] ["#" fragment]) without
// IP-literal hosts ("[...]"): every string it accepts is a URI. reference:
// URI-reference (a URI or a relative reference).
std::string Uri(bool reference) {
  const std::string pct = "%[0-9A-Fa-f]{2}";
  const std::string pchar = fmt::format("(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|{})", pct);
  const std::string user = fmt::format("(?:[A-Za-z0-9._~!$&'()*+,;=:-]|{})", pct);
  const std::string host = fmt::format("(?:[A-Za-z0-9._~!$&'()*+,;=-]|{})", pct);
  const std::string seg_tail = fmt::format("(?:/{}*)*", pchar);
  const std::string authority_path =
      fmt::format("//(?:{0}*@)?{1}*(?::\\d*)?{2}", user, host, seg_tail);
  const std::string tail = fmt::format("(?:\\?(?:{0}|[/?])*)?(?:#(?:{0}|[/?])*)?", pchar);
  const std::string uri = fmt::format("[A-Za-z][A-Za-z0-9+.-]*:(?:{0}|/(?:{1}+{2})?|{1}+{2})?{3}",
                                      authority_path, pchar, seg_tail, tail);
  if (!reference) return uri;
  // relative-ref: its first segment has no ':' (path-noscheme).
  const std::string no_colon = fmt::format("(?:[A-Za-z0-9._~!$&'()*+,;=@-]|{})", pct);
  const std::string relative = fmt::format("(?:{0}|/(?:{1}+{2})?|{3}+{2})?{4}", authority_path,
                                           pchar, seg_tail, no_colon, tail);
  return "(?:" + uri + "|" + relative + ")";
}

}  // namespace

std::optional<std::pair<double, double>> NumericFormatRange(std::string_view format) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (format == "int32") return std::pair(-2147483648.0, 2147483647.0);
  if (format == "int64") {
    const double two63 = std::ldexp(1.0, 63);
    return std::pair(std::nextafter(-two63, 0.0), std::nextafter(two63, 0.0));
  }
  if (format == "utc-millisec") return std::pair(-kInf, kInf);
  return std::nullopt;
}

std::string FormatPattern(std::string_view format) {
  std::string body;
  if (format == "date") {
    body = kDate;
  } else if (format == "time") {
    body = kTime;
  } else if (format == "date-time") {
    body = fmt::format("{}[Tt]{}", kDate, kTime);
  } else if (format == "hostname") {
    body = kHostname;
  } else if (format == "email") {
    // A practical subset of RFC 5321: a dot-atom local part (no quoted
    // strings) and a hostname domain (no address literals).
    body = fmt::format(
        R"([A-Za-z0-9!#$%&'*+/=?^_`{{|}}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~-]+)*@{})",
        kHostname);
  } else if (format == "uuid") {
    body = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";
  } else if (format == "ipv4") {
    body = kIpv4;
  } else if (format == "ipv6") {
    body = Ipv6();
  } else if (format == "uri" || format == "uri-reference") {
    body = Uri(format == "uri-reference");
  } else {
    return "";
  }
  return "^(?:" + body + ")$";
}

uint32_t FormatMaxChars(std::string_view format) {
  return format == "hostname" ? 253 : 0xFFFFFFFFu;
}

StringContents CompileStringContents(const std::string* pattern, const std::string* format,
                                     uint32_t min_chars, uint32_t max_chars) {
  StringContents out;
  const auto add = [&](const char* key, Expected<ByteDfa> d) {
    if (d.ok() && out.dfa) d = Intersect(*out.dfa, *d);
    if (d.ok())
      out.dfa = std::move(*d);
    else
      out.unenforced.emplace_back(key);
  };
  if (pattern) add("pattern", CompilePatternDfa(*pattern));
  if (format)
    if (const std::string p = FormatPattern(*format); !p.empty()) {
      add("format", CompilePatternDfa(p));
      max_chars = std::min(max_chars, FormatMaxChars(*format));
    }
  if (!out.dfa || (min_chars == 0 && max_chars == 0xFFFFFFFFu)) return out;
  auto limited = LimitJsonChars(*out.dfa, min_chars, max_chars);
  if (!limited.ok()) {  // only the min counter can be too large
    out.unenforced.emplace_back("minLength");
    limited = LimitJsonChars(*out.dfa, 0, max_chars);
  }
  if (limited.ok()) out.dfa = std::move(*limited);
  return out;
}

}  // namespace brisk
