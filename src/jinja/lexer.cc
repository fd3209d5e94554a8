#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "jinja/utf8.h"

namespace brisk::jinja {
namespace {

// "\r\n" and "\r" -> "\n"; one trailing newline dropped.
std::string Normalize(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out.push_back(src[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsNameStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool IsNameChar(unsigned char c) { return IsNameStart(c) || std::isdigit(c); }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Operators, longest first (as jinja2 sorts them).
constexpr const char* kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                      "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                      ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Expected<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      size_t start = FindTagStart(pos_);
      if (start == std::string::npos) {
        EmitText(pos_, src_.size());
        pos_ = src_.size();
        break;
      }
      char kind = src_[start + 1];
      char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      std::string text = src_.substr(pos_, start - pos_);
      ControlTextBeforeTag(&text, sign, /*is_var=*/kind == '{');
      AddText(std::move(text), pos_);
      size_t after = start + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        RETURN_IF_ERROR(LexComment(start, after));
      } else if (kind == '%' && IsRawBegin(after)) {
        RETURN_IF_ERROR(LexRaw(start));
      } else {
        RETURN_IF_ERROR(LexTag(start, after, kind == '{'));
      }
    }
    Token eof;
    eof.kind = TokenKind::kEof;
    eof.pos = PosAt(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  SourcePos PosAt(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = it - line_starts_.begin();
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  Status Error(size_t offset, std::string_view msg) const {
    SourcePos p = PosAt(offset);
    return InvalidArgument("{}:{}: {}", p.line, p.col, msg);
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // Whitespace control for the text in front of a tag: `-` strips all of it;
  // lstrip_blocks strips indentation before a block/comment tag that starts
  // its line.
  void ControlTextBeforeTag(std::string* text, char sign, bool is_var) const {
    if (sign == '-') {
      *text = PyStrip(*text, false, true);
      return;
    }
    if (sign == '+' || is_var) return;
    size_t nl = text->rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return;
    std::string_view tail = std::string_view(*text).substr(l_pos);
    if (!tail.empty() && PyStrip(tail, true, true).empty()) text->resize(l_pos);
  }

  void AddText(std::string text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::kText;
    t.text = std::move(text);
    t.pos = PosAt(offset);
    tokens_.push_back(std::move(t));
  }

  void EmitText(size_t b, size_t e) { AddText(src_.substr(b, e - b), b); }

  // After a tag end: `-` eats all whitespace, `+` nothing, otherwise
  // trim_blocks eats one newline (block and comment tags only).
  void AfterTagEnd(size_t end, char sign, bool trim_newline) {
    pos_ = end;
    if (sign == '-') {
      size_t p = end;  // Python's \s*: Unicode whitespace
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (p < src_.size() && static_cast<unsigned char>(src_[p]) >= 0x80) {
        p = src_.size() - PyStrip(std::string_view(src_).substr(p), true, false).size();
      }
      pos_ = p;
    } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  Status LexComment(size_t start, size_t content) {
    size_t k = src_.find("#}", content);
    if (k == std::string::npos) return Error(start, "missing end of comment tag");
    char sign = (k > content && (src_[k - 1] == '-' || src_[k - 1] == '+')) ? src_[k - 1] : '\0';
    AfterTagEnd(k + 2, sign, /*trim_newline=*/true);
    return Status::Ok();
  }

  size_t SkipSpaces(size_t p) const {
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    return p;
  }

  // At `p` (after "{%" and its sign): "\s*raw\s*(-%}|%})"?
  bool IsRawBegin(size_t p) const {
    p = SkipSpaces(p);
    if (src_.compare(p, 3, "raw") != 0) return false;
    p = SkipSpaces(p + 3);
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  Status LexRaw(size_t start) {
    size_t p = SkipSpaces(start + 2 + ((src_[start + 2] == '-' || src_[start + 2] == '+') ? 1 : 0));
    p = SkipSpaces(p + 3);
    if (src_[p] == '-') {
      AfterTagEnd(p + 3, '-', false);
    } else {
      AfterTagEnd(p + 2, '\0', false);  // no trim_blocks after {% raw %}
    }
    size_t body = pos_;
    for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      char sign = (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ? src_[r] : '\0';
      if (sign) ++r;
      r = SkipSpaces(r);
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r = SkipSpaces(r + 6);
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, q - body);
      ControlTextBeforeTag(&text, sign, false);
      AddText(std::move(text), body);
      AfterTagEnd(r + 2, end_sign, true);
      return Status::Ok();
    }
    return Error(start, "missing end of raw directive");
  }

  Status LexTag(size_t start, size_t p, bool is_var) {
    Token begin;
    begin.kind = is_var ? TokenKind::kVarBegin : TokenKind::kBlockBegin;
    begin.pos = PosAt(start);
    tokens_.push_back(std::move(begin));
    std::vector<char> balance;  // expected closing brackets
    while (true) {
      if (p >= src_.size()) {
        return Error(start, is_var ? "unexpected end of template, expected '}}'"
                                   : "unexpected end of template, expected '%}'");
      }
      if (balance.empty()) {
        size_t end = 0;
        char sign = '\0';
        if (is_var) {
          if (src_.compare(p, 3, "-}}") == 0)
            end = p + 3, sign = '-';
          else if (src_.compare(p, 2, "}}") == 0)
            end = p + 2;
        } else {
          if (src_.compare(p, 3, "-%}") == 0)
            end = p + 3, sign = '-';
          else if (src_.compare(p, 3, "+%}") == 0)
            end = p + 3, sign = '+';
          else if (src_.compare(p, 2, "%}") == 0)
            end = p + 2;
        }
        if (end) {
          Token t;
          t.kind = is_var ? TokenKind::kVarEnd : TokenKind::kBlockEnd;
          t.pos = PosAt(p);
          tokens_.push_back(std::move(t));
          AfterTagEnd(end, sign, /*trim_newline=*/!is_var);
          return Status::Ok();
        }
      }
      char c = src_[p];
      if (IsSpace(c)) {
        ++p;
        continue;
      }
      Token t;
      t.pos = PosAt(p);
      if (std::isdigit(static_cast<unsigned char>(c))) {
        RETURN_IF_ERROR(LexNumber(&p, &t));
      } else if (IsNameStart(c)) {
        size_t b = p;
        while (p < src_.size() && IsNameChar(src_[p])) ++p;
        t.kind = TokenKind::kName;
        t.text = src_.substr(b, p - b);
      } else if (c == '\'' || c == '"') {
        RETURN_IF_ERROR(LexString(&p, &t));
      } else {
        const char* op = nullptr;
        for (const char* o : kOperators) {
          if (src_.compare(p, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        }
        if (!op) return Error(p, fmt::format("unexpected char '{}'", c));
        char oc = op[0];
        if (!op[1] && (oc == '(' || oc == '[' || oc == '{')) {
          if (balance.size() >= 256) return Error(p, "brackets nested too deeply");
          balance.push_back(oc == '(' ? ')' : oc == '[' ? ']' : '}');
        } else if (!op[1] && (oc == ')' || oc == ']' || oc == '}')) {
          if (balance.empty()) return Error(p, fmt::format("unexpected '{}'", oc));
          if (balance.back() != oc) {
            return Error(p, fmt::format("unexpected '{}', expected '{}'", oc, balance.back()));
          }
          balance.pop_back();
        }
        t.kind = TokenKind::kOperator;
        t.text = op;
        p += std::strlen(op);
      }
      tokens_.push_back(std::move(t));
    }
  }

  Status LexNumber(size_t* pp, Token* t) {
    size_t p = *pp, b = p;
    auto digits = [&] {
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                 (src_[p] == '_' && p + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
        ++p;
      }
    };
    digits();
    bool is_float = false;
    bool after_dot = b > 0 && src_[b - 1] == '.';  // `x.0.1` is two subscripts
    if (!after_dot && p + 1 < src_.size() && src_[p] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
      ++p;
      digits();
      is_float = true;
    }
    if (!after_dot && p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        p = q;
        digits();
        is_float = true;
      }
    }
    std::string num;
    for (size_t i = b; i < p; ++i) {
      if (src_[i] != '_') num.push_back(src_[i]);
    }
    if (is_float) {
      t->kind = TokenKind::kFloat;
      t->float_value = std::strtod(num.c_str(), nullptr);
    } else {
      t->kind = TokenKind::kInt;
      errno = 0;
      t->int_value = std::strtoll(num.c_str(), nullptr, 10);
      if (errno == ERANGE) return Error(b, "integer literal too large");
    }
    *pp = p;
    return Status::Ok();
  }

  // Python string literal escapes (jinja2 decodes them with unicode-escape).
  Status LexString(size_t* pp, Token* t) {
    size_t p = *pp;
    char q = src_[p++];
    std::string out;
    while (true) {
      if (p >= src_.size()) return Error(*pp, "unterminated string");
      char c = src_[p];
      if (c == q) {
        ++p;
        break;
      }
      if (c != '\\' || p + 1 >= src_.size()) {
        out.push_back(c);
        ++p;
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int i = 0; i < n; ++i) {
            int h = p + i < src_.size() ? HexDigit(src_[p + i]) : -1;
            if (h < 0) return Error(p - 2, fmt::format("truncated \\{} escape", e));
            cp = cp * 16 + h;
          }
          if (cp > 0x10FFFF) return Error(p - 2, "escape out of Unicode range");
          p += n;
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = e - '0';
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i) {
              cp = cp * 8 + (src_[p++] - '0');
            }
            AppendUtf8(cp, &out);
          } else {
            out.push_back('\\');  // unknown escapes stay as written
            out.push_back(e);
          }
      }
    }
    t->kind = TokenKind::kString;
    t->text = std::move(out);
    *pp = p;
    return Status::Ok();
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

Expected<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(Normalize(source)).Run();
}

}  // namespace brisk::jinja
