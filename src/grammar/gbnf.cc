#include "grammar/gbnf.h"

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/char_class.h"

namespace brisk {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : s_(text) {}

  Expected<std::shared_ptr<const CfgGrammar>> Run() {
    SkipSpace();
    while (ok() && i_ < s_.size()) {
      ParseRule();
      SkipSpace();
    }
    if (!ok()) return error_;
    const std::string* undefined = nullptr;  // the first one in the text
    for (const auto& [name, r] : rules_)
      if (!r.defined && (!undefined || r.first_use < rules_[*undefined].first_use))
        undefined = &name;
    if (undefined) {
      i_ = rules_[*undefined].first_use;
      Fail(fmt::format("undefined rule '{}'", *undefined));
      return error_;
    }
    auto root = rules_.find("root");
    if (root == rules_.end()) return InvalidArgument("the grammar has no 'root' rule");
    return b_.Finish(root->second.id);
  }

 private:
  struct RuleInfo {
    uint32_t id = 0;
    bool defined = false;
    size_t first_use = 0;
  };

  bool ok() const { return error_.ok(); }

  void Fail(const std::string& what) {
    if (!ok()) return;
    size_t line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = InvalidArgument("grammar {}:{}: {}", line, col, what);
  }

  std::string Here() const {
    if (i_ >= s_.size()) return "the end of the grammar";
    const auto c = static_cast<uint8_t>(s_[i_]);
    if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02X}", c);
  }

  // Spaces, tabs, newlines and comments.
  void SkipSpace() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::string ParseName() {
    const size_t start = i_;
    while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // Whether a `name ::=` starts at i_ (the next rule).
  bool AtRuleStart() const {
    size_t k = i_;
    while (k < s_.size() && IsNameChar(s_[k])) ++k;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t' || s_[k] == '\n' || s_[k] == '\r')) ++k;
    return s_.substr(k, 3) == "::=";
  }

  uint32_t RuleId(const std::string& name, size_t at) {
    auto [it, inserted] = rules_.try_emplace(name);
    if (inserted) {
      it->second.id = b_.NewRule(name);
      it->second.first_use = at;
    }
    return it->second.id;
  }

  void ParseRule() {
    if (!IsNameChar(s_[i_])) return Fail(fmt::format("expected a rule name, got {}", Here()));
    const size_t at = i_;
    const std::string name = ParseName();
    SkipSpace();
    if (s_.substr(i_, 3) != "::=") return Fail(fmt::format("expected '::=' after '{}'", name));
    i_ += 3;
    const uint32_t id = RuleId(name, at);
    RuleInfo& info = rules_[name];
    if (info.defined) {
      i_ = at;
      return Fail(fmt::format("rule '{}' is defined twice", name));
    }
    info.defined = true;
    ParseAlternatives(id, 0);
    if (ok() && i_ < s_.size() && !AtRuleStart())
      Fail(fmt::format("unexpected {} (a rule ends where the next 'name ::=' starts)", Here()));
  }

  void ParseAlternatives(uint32_t rule, int depth) {
    while (ok()) {
      std::vector<uint32_t> seq = ParseSequence(depth);
      if (!ok()) return;
      b_.AddAlt(rule, std::move(seq));
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        continue;
      }
      return;
    }
  }

  std::vector<uint32_t> ParseSequence(int depth) {
    std::vector<uint32_t> seq;
    while (ok()) {
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] == ')' || s_[i_] == '|') break;
      if (depth == 0 && AtRuleStart()) break;
      std::vector<uint32_t> item = ParsePrimary(depth);
      if (!ok()) break;
      ParsePostfix(&item);
      seq.insert(seq.end(), item.begin(), item.end());
    }
    return seq;
  }

  void ParsePostfix(std::vector<uint32_t>* item) {
    while (ok()) {
      const size_t save = i_;
      SkipSpace();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      if (c != '*' && c != '+' && c != '?' && c != '{') {
        i_ = save;
        break;
      }
      ++i_;
      const uint32_t x = item->size() == 1 ? (*item)[0] : b_.Group(*item);
      uint32_t r = x;
      if (c == '*') r = b_.Star(x);
      if (c == '+') r = b_.Plus(x);
      if (c == '?') r = b_.Optional(x);
      if (c == '{') {
        int64_t min = 0, max = 0;
        if (!ParseCount(&min)) return Fail("expected a number after '{'");
        SkipSpace();
        max = min;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          SkipSpace();
          max = -1;
          if (i_ < s_.size() && s_[i_] != '}' && !ParseCount(&max))
            return Fail("expected a number or '}' after ','");
        }
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] != '}')
          return Fail(fmt::format("expected '}}', got {}", Here()));
        ++i_;
        if (max >= 0 && max < min)
          return Fail(fmt::format("repetition {{{},{}}}: max is below min", min, max));
        r = b_.Repeat(x, min, max);
      }
      *item = {r};
    }
  }

  bool ParseCount(int64_t* out) {
    SkipSpace();
    const size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + (s_[i_] - '0');
      if (v > 1000000) v = 1000000;  // Repeat() reports the range
      ++i_;
    }
    *out = v;
    return i_ > start;
  }

  std::vector<uint32_t> ParsePrimary(int depth) {
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      std::string bytes;
      while (ok()) {
        if (i_ >= s_.size()) {
          Fail("unterminated string literal");
          break;
        }
        if (s_[i_] == '"') {
          ++i_;
          break;
        }
        uint32_t cp = 0;
        if (!ParseChar(&cp)) break;
        AppendUtf8(cp, &bytes);
      }
      std::vector<uint32_t> seq;
      b_.AppendLiteral(bytes, &seq);
      return seq;
    }
    if (c == '[') return {ParseClass()};
    if (c == '.') {
      ++i_;
      return {b_.CodePointClass({{0, 0x10FFFF}}, false)};
    }
    if (c == '(') {
      if (depth >= kMaxCfgNesting) {
        Fail(fmt::format("groups nested deeper than {}", kMaxCfgNesting));
        return {};
      }
      ++i_;
      const uint32_t r = b_.NewRule("group");
      ParseAlternatives(r, depth + 1);
      if (!ok()) return {};
      if (i_ >= s_.size() || s_[i_] != ')') {
        Fail(fmt::format("expected ')', got {}", Here()));
        return {};
      }
      ++i_;
      return {r};
    }
    if (IsNameChar(c)) {
      const size_t at = i_;
      return {RuleId(ParseName(), at)};
    }
    Fail(fmt::format("unexpected {}", Here()));
    return {};
  }

  // One character of a literal or class (raw UTF-8 or an escape).
  bool ParseChar(uint32_t* cp) {
    if (s_[i_] != '\\') {
      const size_t n = DecodeUtf8Char(s_, i_, cp);
      if (n == 0) {
        Fail("invalid UTF-8");
        return false;
      }
      i_ += n;
      return true;
    }
    ++i_;
    if (i_ >= s_.size()) {
      Fail("unterminated escape");
      return false;
    }
    const char e = s_[i_++];
    int digits = 0;
    switch (e) {
      case 'n': *cp = '\n'; return true;
      case 't': *cp = '\t'; return true;
      case 'r': *cp = '\r'; return true;
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
      case '\'': *cp = static_cast<uint8_t>(e); return true;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default:
        --i_;
        Fail(fmt::format("unknown escape '\\{}'", e));
        return false;
    }
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const int h = i_ < s_.size() ? HexDigitValue(s_[i_]) : -1;
      if (h < 0) {
        Fail(fmt::format("'\\{}' needs {} hex digits", e, digits));
        return false;
      }
      v = (v << 4) | static_cast<uint32_t>(h);
      ++i_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
      Fail(fmt::format("'\\{}' escape U+{:X} is not a Unicode character", e, v));
      return false;
    }
    *cp = v;
    return true;
  }

  uint32_t ParseClass() {
    const CharClassDialect dialect{
        .read_member = [this](uint32_t* cp, CodePointRanges*) { return ParseChar(cp); },
        .fail = [this](std::string_view what) { Fail(std::string(what)); },
    };
    CharClass c;
    if (!ParseCharClass(s_, &i_, dialect, &c)) return 0;
    return b_.CodePointClass(std::move(c.ranges), c.negate);
  }

  std::string_view s_;
  size_t i_ = 0;
  CfgBuilder b_;
  std::unordered_map<std::string, RuleInfo> rules_;
  Status error_;
};

}  // namespace

Expected<std::shared_ptr<const CfgGrammar>> CompileGbnf(std::string_view text) {
  return GbnfParser(text).Run();
}

}  // namespace brisk
