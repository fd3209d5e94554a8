// Internal to the Jinja parser: the recursive-descent parser state shared by
// parser.cc (statements) and expr_parser.cc (expressions).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "util/status.h"

namespace brisk::jinja {

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  Expected<std::unique_ptr<Template>> Run();

 private:
  // RAII nesting counter.
  class Nest {
   public:
    explicit Nest(int* d) : d_(d) { ++*d_; }
    ~Nest() { --*d_; }
    bool too_deep() const { return *d_ > kMaxParseNesting; }

   private:
    int* d_;
  };

  const Token& Cur() const { return toks_[i_]; }

  const Token& Peek(size_t k = 1) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }

  void Next() {
    if (i_ + 1 < toks_.size()) ++i_;
  }

  bool IsOp(std::string_view op) const {
    return Cur().kind == TokenKind::kOperator && Cur().text == op;
  }

  bool IsName(std::string_view n) const {
    return Cur().kind == TokenKind::kName && Cur().text == n;
  }

  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }

  bool SkipName(std::string_view n) {
    if (!IsName(n)) return false;
    Next();
    return true;
  }

  Status ErrorAt(const Token& t, std::string_view msg) const {
    return InvalidArgument("{}:{}: {}", t.pos.line, t.pos.col, msg);
  }

  Status Unexpected(std::string_view wanted) const;

  Status ExpectOp(std::string_view op);

  Status ExpectName(std::string_view n);

  Status ExpectBlockEnd();

  Expected<std::string> ExpectIdent();

  ExprPtr Node(ExprKind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  // Appends a child and keeps `height` current; errors past kMaxExprHeight.
  Status Add(Expr* parent, ExprPtr child) {
    if (child) parent->height = std::max(parent->height, child->height + 1);
    parent->args.push_back(std::move(child));
    if (parent->height > kMaxExprHeight) {
      return InvalidArgument("{}:{}: expression too deeply nested", parent->pos.line,
                             parent->pos.col);
    }
    return Status::Ok();
  }

  Expected<ExprPtr> Binary(ExprKind kind, SourcePos pos, ExprPtr a, ExprPtr b) {
    ExprPtr e = Node(kind, pos);
    RETURN_IF_ERROR(Add(e.get(), std::move(a)));
    RETURN_IF_ERROR(Add(e.get(), std::move(b)));
    return e;
  }

  // Statements (parser.cc).
  // Parses until a {% tag %} whose name is in `end_tags`; leaves the cursor
  // after that name and stores it in *found. Empty end_tags: until the end.
  Expected<StmtList> ParseBody(std::initializer_list<std::string_view> end_tags,
                               std::string* found);

  Expected<StmtPtr> ParseStatement();

  Expected<StmtPtr> ParseIf(StmtPtr s);

  // Names, optionally comma-separated and parenthesized: `x`, `k, v`, `(k, v)`.
  Status ParseTargets(Stmt* s);

  Expected<StmtPtr> ParseFor(StmtPtr s);

  Expected<StmtPtr> ParseSet(StmtPtr s);

  Expected<StmtPtr> ParseMacro(StmtPtr s);

  Expected<StmtPtr> ParseFilterBlock(StmtPtr s);

  Expected<StmtPtr> ParseWith(StmtPtr s);

  // Expressions (expr_parser.cc).
  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const;

  // `a` or `a, b, ...` (a tuple). with_condexpr=false leaves `if` to the caller.
  Expected<ExprPtr> ParseTuple(bool with_condexpr,
                               std::initializer_list<std::string_view> extra_end,
                               bool explicit_parens = false);

  Expected<ExprPtr> ParseExpression(bool with_condexpr);

  Expected<ExprPtr> ParseOr();

  Expected<ExprPtr> ParseAnd();

  Expected<ExprPtr> ParseNot();

  Expected<ExprPtr> ParseCompare();

  // Left-associative binary levels: `ops` with their BinaryOp, next level.
  template <typename NextFn>
  Expected<ExprPtr> ParseBinaryLevel(
      std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, NextFn next);

  Expected<ExprPtr> ParseMath1();

  Expected<ExprPtr> ParseConcat();

  Expected<ExprPtr> ParseMath2();

  Expected<ExprPtr> ParsePow();

  Expected<ExprPtr> ParseUnary(bool with_filter);

  Expected<ExprPtr> ParsePrimary();

  Expected<ExprPtr> ParsePostfix(ExprPtr e);

  Expected<ExprPtr> ParseSubscript(ExprPtr obj);

  // `(args, name=value)` appended to `call` (whose args[0] is already set).
  Status ParseCallArgs(Expr* call);

  Expected<ExprPtr> ParseCall(ExprPtr callee);

  // `name[.name](args)`; the filter or test name.
  Expected<std::string> ParseDottedName();

  Expected<ExprPtr> ParseFilter(ExprPtr operand);

  // `| f | g(x)` (or `f | g` inside {% filter %}) applied to `operand`.
  Expected<ExprPtr> ParseFilterChain(ExprPtr operand, bool leading_pipe = true);

  Expected<ExprPtr> ParseFilterExpr(ExprPtr e);

  Expected<ExprPtr> ParseTest(ExprPtr operand);

  std::vector<Token> toks_;

  size_t i_ = 0;

  int depth_ = 0;

  int loop_depth_ = 0;
};

}  // namespace brisk::jinja
