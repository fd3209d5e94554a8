#include "jinja/parser.h"

#include "jinja/parser_impl.h"

namespace brisk::jinja {
namespace {

const char* TokenDesc(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText: return "template text";
    case TokenKind::kVarBegin: return "'{{'";
    case TokenKind::kVarEnd: return "end of print statement";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "end of statement block";
    case TokenKind::kName: return "name";
    case TokenKind::kString: return "string";
    case TokenKind::kInt: return "integer";
    case TokenKind::kFloat: return "float";
    case TokenKind::kOperator: return "operator";
    case TokenKind::kEof: return "end of template";
  }
  return "token";
}

}  // namespace

Expected<std::unique_ptr<Template>> Parser::Run() {
  auto tmpl = std::make_unique<Template>();
  std::string found;
  ASSIGN_OR_RETURN(tmpl->body, ParseBody({}, &found));
  return tmpl;
}

Status Parser::Unexpected(std::string_view wanted) const {
  const Token& t = Cur();
  std::string got = t.kind == TokenKind::kOperator || t.kind == TokenKind::kName
                        ? fmt::format("'{}'", t.text)
                        : TokenDesc(t);
  return ErrorAt(t, fmt::format("unexpected {}, expected {}", got, wanted));
}

Status Parser::ExpectOp(std::string_view op) {
  if (SkipOp(op)) return Status::Ok();
  return Unexpected(fmt::format("'{}'", op));
}

Status Parser::ExpectName(std::string_view n) {
  if (SkipName(n)) return Status::Ok();
  return Unexpected(fmt::format("'{}'", n));
}

Status Parser::ExpectBlockEnd() {
  if (Cur().kind != TokenKind::kBlockEnd) return Unexpected("end of statement block");
  Next();
  return Status::Ok();
}

Expected<std::string> Parser::ExpectIdent() {
  if (Cur().kind != TokenKind::kName) return Unexpected("a name");
  std::string n = Cur().text;
  Next();
  return n;
}

// Parses until a {% tag %} whose name is in `end_tags`; leaves the cursor
// after that name and stores it in *found. Empty end_tags: until the end.
Expected<StmtList> Parser::ParseBody(std::initializer_list<std::string_view> end_tags,
                                     std::string* found) {
  Nest nest(&depth_);
  if (nest.too_deep()) return ErrorAt(Cur(), "statements nested too deeply");
  StmtList body;
  while (true) {
    const Token& t = Cur();
    switch (t.kind) {
      case TokenKind::kText: {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->pos = t.pos;
        s->text = t.text;
        body.push_back(std::move(s));
        Next();
        break;
      }
      case TokenKind::kVarBegin: {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->pos = t.pos;
        Next();
        ASSIGN_OR_RETURN(s->expr, ParseTuple(true, {}));
        if (Cur().kind != TokenKind::kVarEnd) return Unexpected("end of print statement");
        Next();
        body.push_back(std::move(s));
        break;
      }
      case TokenKind::kBlockBegin: {
        const Token& name = Peek();
        if (name.kind == TokenKind::kName &&
            std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
          *found = name.text;
          Next();
          Next();
          return body;
        }
        Next();
        ASSIGN_OR_RETURN(StmtPtr s, ParseStatement());
        body.push_back(std::move(s));
        break;
      }
      case TokenKind::kEof: {
        if (end_tags.size() == 0) return body;
        std::string want;
        for (std::string_view tag : end_tags) {
          want += want.empty() ? "" : " or ";
          want += fmt::format("'{}'", tag);
        }
        return ErrorAt(t, fmt::format("unexpected end of template, expected {}", want));
      }
      default: return Unexpected("template text or a tag");
    }
  }
}

Expected<StmtPtr> Parser::ParseStatement() {
  const Token& kw = Cur();
  if (kw.kind != TokenKind::kName) return Unexpected("a statement name");
  auto s = std::make_unique<Stmt>();
  s->pos = kw.pos;
  std::string name = kw.text;
  Next();
  if (name == "if") return ParseIf(std::move(s));
  if (name == "for") return ParseFor(std::move(s));
  if (name == "set") return ParseSet(std::move(s));
  if (name == "macro") return ParseMacro(std::move(s));
  if (name == "filter") return ParseFilterBlock(std::move(s));
  if (name == "with") return ParseWith(std::move(s));
  if (name == "generation") {
    s->kind = StmtKind::kGeneration;
    RETURN_IF_ERROR(ExpectBlockEnd());
    std::string found;
    ASSIGN_OR_RETURN(s->body, ParseBody({"endgeneration"}, &found));
    RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) return ErrorAt(kw, fmt::format("'{}' outside of a loop", name));
    s->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  static constexpr std::string_view kUnsupported[] = {
      "include", "import", "from", "extends", "block", "call", "do", "autoescape", "trans"};
  for (std::string_view u : kUnsupported) {
    if (name == u) return ErrorAt(toks_[i_ - 1], fmt::format("unsupported tag '{}'", name));
  }
  return ErrorAt(toks_[i_ - 1], fmt::format("unknown tag '{}'", name));
}

Expected<StmtPtr> Parser::ParseIf(StmtPtr s) {
  s->kind = StmtKind::kIf;
  while (true) {
    ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(false, {}));
    RETURN_IF_ERROR(ExpectBlockEnd());
    std::string found;
    ASSIGN_OR_RETURN(StmtList body, ParseBody({"elif", "else", "endif"}, &found));
    s->branches.emplace_back(std::move(cond), std::move(body));
    if (found == "elif") continue;
    if (found == "else") {
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(StmtList else_body, ParseBody({"endif"}, &found));
      s->branches.emplace_back(nullptr, std::move(else_body));
    }
    RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
}

// Names, optionally comma-separated and parenthesized: `x`, `k, v`, `(k, v)`.
Status Parser::ParseTargets(Stmt* s) {
  bool paren = SkipOp("(");
  while (true) {
    ASSIGN_OR_RETURN(std::string n, ExpectIdent());
    s->targets.push_back(std::move(n));
    if (!SkipOp(",")) break;
    s->unpack = true;
    if (Cur().kind != TokenKind::kName) break;  // trailing comma
  }
  if (paren) {
    RETURN_IF_ERROR(ExpectOp(")"));
    s->unpack = s->unpack || s->targets.size() > 1;
  }
  return Status::Ok();
}

Expected<StmtPtr> Parser::ParseFor(StmtPtr s) {
  s->kind = StmtKind::kFor;
  RETURN_IF_ERROR(ParseTargets(s.get()));
  RETURN_IF_ERROR(ExpectName("in"));
  ASSIGN_OR_RETURN(s->expr, ParseTuple(false, {"recursive"}));
  if (SkipName("if")) {
    ASSIGN_OR_RETURN(s->cond, ParseExpression(true));
  }
  if (IsName("recursive")) return ErrorAt(Cur(), "unsupported: recursive loops");
  RETURN_IF_ERROR(ExpectBlockEnd());
  ++loop_depth_;
  std::string found;
  auto body = ParseBody({"endfor", "else"}, &found);
  --loop_depth_;
  if (!body.ok()) return body.status();
  s->body = std::move(body).value();
  if (found == "else") {
    RETURN_IF_ERROR(ExpectBlockEnd());
    ASSIGN_OR_RETURN(s->else_body, ParseBody({"endfor"}, &found));
  }
  RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Expected<StmtPtr> Parser::ParseSet(StmtPtr s) {
  if (Cur().kind == TokenKind::kName && Peek().kind == TokenKind::kOperator && Peek().text == ".") {
    s->targets.push_back(Cur().text);
    Next();
    Next();
    ASSIGN_OR_RETURN(s->attr, ExpectIdent());
  } else {
    RETURN_IF_ERROR(ParseTargets(s.get()));
  }
  if (SkipOp("=")) {
    s->kind = StmtKind::kSet;
    ASSIGN_OR_RETURN(s->expr, ParseTuple(true, {}));
    RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (!s->attr.empty() || s->unpack) return Unexpected("'='");
  s->kind = StmtKind::kSetBlock;
  if (IsOp("|")) {
    ASSIGN_OR_RETURN(s->expr, ParseFilterChain(nullptr));
  }
  RETURN_IF_ERROR(ExpectBlockEnd());
  std::string found;
  ASSIGN_OR_RETURN(s->body, ParseBody({"endset"}, &found));
  RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Expected<StmtPtr> Parser::ParseMacro(StmtPtr s) {
  s->kind = StmtKind::kMacro;
  ASSIGN_OR_RETURN(s->name, ExpectIdent());
  RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!s->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp(")")) break;
    MacroParam p;
    ASSIGN_OR_RETURN(p.name, ExpectIdent());
    if (SkipOp("=")) {
      ASSIGN_OR_RETURN(p.default_value, ParseExpression(true));
    } else if (!s->params.empty() && s->params.back().default_value) {
      return ErrorAt(Cur(), "non-default argument follows default argument");
    }
    s->params.push_back(std::move(p));
  }
  Next();
  RETURN_IF_ERROR(ExpectBlockEnd());
  int saved_loops = loop_depth_;
  loop_depth_ = 0;
  std::string found;
  auto body = ParseBody({"endmacro"}, &found);
  loop_depth_ = saved_loops;
  if (!body.ok()) return body.status();
  s->body = std::move(body).value();
  if (Cur().kind == TokenKind::kName) Next();  // {% endmacro name %}
  RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Expected<StmtPtr> Parser::ParseFilterBlock(StmtPtr s) {
  s->kind = StmtKind::kFilterBlock;
  ASSIGN_OR_RETURN(s->expr, ParseFilterChain(nullptr, /*leading_pipe=*/false));
  RETURN_IF_ERROR(ExpectBlockEnd());
  std::string found;
  ASSIGN_OR_RETURN(s->body, ParseBody({"endfilter"}, &found));
  RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Expected<StmtPtr> Parser::ParseWith(StmtPtr s) {
  s->kind = StmtKind::kWith;
  while (Cur().kind != TokenKind::kBlockEnd) {
    if (!s->targets.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(std::string n, ExpectIdent());
    s->targets.push_back(std::move(n));
    RETURN_IF_ERROR(ExpectOp("="));
    ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
    s->with_values.push_back(std::move(v));
  }
  Next();
  std::string found;
  ASSIGN_OR_RETURN(s->body, ParseBody({"endwith"}, &found));
  RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Expected<std::unique_ptr<Template>> ParseTemplate(std::string_view source) {
  ASSIGN_OR_RETURN(std::vector<Token> toks, Tokenize(source));
  return Parser(std::move(toks)).Run();
}

}  // namespace brisk::jinja
