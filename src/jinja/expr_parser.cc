// Expression half of the Jinja parser (parser_impl.h): jinja2's
// precedence, lowest first: `x if c else y`, or, and, not, comparisons and
// `in` (chained), + -, ~, * / // %, **, unary - +, then primaries with
// postfix `.attr`, `[i]`, `[a:b:c]`, `(args)`, filters `| f` and tests `is t`.
#include "jinja/parser_impl.h"

namespace brisk::jinja {

bool Parser::IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
  const Token& t = Cur();
  if (t.kind == TokenKind::kVarEnd || t.kind == TokenKind::kBlockEnd || t.kind == TokenKind::kEof ||
      (t.kind == TokenKind::kOperator && t.text == ")")) {
    return true;
  }
  if (t.kind == TokenKind::kName) {
    for (std::string_view e : extra_end) {
      if (t.text == e) return true;
    }
  }
  return false;
}

// `a` or `a, b, ...` (a tuple). with_condexpr=false leaves `if` to the caller.
Expected<ExprPtr> Parser::ParseTuple(bool with_condexpr,
                                     std::initializer_list<std::string_view> extra_end,
                                     bool explicit_parens) {
  SourcePos pos = Cur().pos;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(extra_end)) break;
    ASSIGN_OR_RETURN(ExprPtr e, ParseExpression(with_condexpr));
    items.push_back(std::move(e));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) return Unexpected("an expression");
  }
  ExprPtr t = Node(ExprKind::kTuple, pos);
  for (auto& e : items) RETURN_IF_ERROR(Add(t.get(), std::move(e)));
  return t;
}

Expected<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  if (!with_condexpr) return ParseOr();
  Nest nest(&depth_);
  if (nest.too_deep()) return ErrorAt(Cur(), "expression nested too deeply");
  SourcePos pos = Cur().pos;
  ASSIGN_OR_RETURN(ExprPtr e, ParseOr());
  while (SkipName("if")) {
    ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
    ExprPtr else_e;
    if (SkipName("else")) {
      ASSIGN_OR_RETURN(else_e, ParseExpression(true));
    }
    ExprPtr c = Node(ExprKind::kCond, pos);
    RETURN_IF_ERROR(Add(c.get(), std::move(e)));
    RETURN_IF_ERROR(Add(c.get(), std::move(cond)));
    RETURN_IF_ERROR(Add(c.get(), std::move(else_e)));
    e = std::move(c);
  }
  return e;
}

Expected<ExprPtr> Parser::ParseOr() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
  while (IsName("or")) {
    SourcePos pos = Cur().pos;
    Next();
    ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
    ASSIGN_OR_RETURN(e, Binary(ExprKind::kOr, pos, std::move(e), std::move(r)));
  }
  return e;
}

Expected<ExprPtr> Parser::ParseAnd() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
  while (IsName("and")) {
    SourcePos pos = Cur().pos;
    Next();
    ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
    ASSIGN_OR_RETURN(e, Binary(ExprKind::kAnd, pos, std::move(e), std::move(r)));
  }
  return e;
}

Expected<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    Nest nest(&depth_);
    if (nest.too_deep()) return ErrorAt(Cur(), "expression nested too deeply");
    ExprPtr n = Node(ExprKind::kNot, Cur().pos);
    Next();
    ASSIGN_OR_RETURN(ExprPtr inner, ParseNot());
    RETURN_IF_ERROR(Add(n.get(), std::move(inner)));
    return n;
  }
  return ParseCompare();
}

Expected<ExprPtr> Parser::ParseCompare() {
  SourcePos pos = Cur().pos;
  ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    const Token& t = Cur();
    if (t.kind == TokenKind::kOperator && t.text == "==")
      op = CompareOp::kEq;
    else if (t.kind == TokenKind::kOperator && t.text == "!=")
      op = CompareOp::kNe;
    else if (t.kind == TokenKind::kOperator && t.text == "<")
      op = CompareOp::kLt;
    else if (t.kind == TokenKind::kOperator && t.text == "<=")
      op = CompareOp::kLe;
    else if (t.kind == TokenKind::kOperator && t.text == ">")
      op = CompareOp::kGt;
    else if (t.kind == TokenKind::kOperator && t.text == ">=")
      op = CompareOp::kGe;
    else if (IsName("in"))
      op = CompareOp::kIn;
    else if (IsName("not") && Peek().kind == TokenKind::kName && Peek().text == "in") {
      op = CompareOp::kNotIn;
      Next();
    } else {
      break;
    }
    Next();
    if (!cmp) {
      cmp = Node(ExprKind::kCompare, pos);
      RETURN_IF_ERROR(Add(cmp.get(), std::move(first)));
    }
    ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath1());
    cmp->cmp_ops.push_back(op);
    RETURN_IF_ERROR(Add(cmp.get(), std::move(rhs)));
  }
  return cmp ? std::move(cmp) : std::move(first);
}

// Left-associative binary levels: `ops` with their BinaryOp, next level.
template <typename NextFn>
Expected<ExprPtr> Parser::ParseBinaryLevel(
    std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, NextFn next) {
  ASSIGN_OR_RETURN(ExprPtr e, next());
  while (Cur().kind == TokenKind::kOperator) {
    auto it =
        std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == Cur().text; });
    if (it == ops.end()) break;
    SourcePos pos = Cur().pos;
    Next();
    ASSIGN_OR_RETURN(ExprPtr r, next());
    ASSIGN_OR_RETURN(e, Binary(ExprKind::kBinary, pos, std::move(e), std::move(r)));
    e->op = it->second;
  }
  return e;
}

Expected<ExprPtr> Parser::ParseMath1() {
  return ParseBinaryLevel({{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}},
                          [this] { return ParseConcat(); });
}

Expected<ExprPtr> Parser::ParseConcat() {
  return ParseBinaryLevel({{"~", BinaryOp::kConcat}}, [this] { return ParseMath2(); });
}

Expected<ExprPtr> Parser::ParseMath2() {
  return ParseBinaryLevel({{"*", BinaryOp::kMul},
                           {"/", BinaryOp::kDiv},
                           {"//", BinaryOp::kFloorDiv},
                           {"%", BinaryOp::kMod}},
                          [this] { return ParsePow(); });
}

Expected<ExprPtr> Parser::ParsePow() {
  return ParseBinaryLevel({{"**", BinaryOp::kPow}}, [this] { return ParseUnary(true); });
}

Expected<ExprPtr> Parser::ParseUnary(bool with_filter) {
  Nest nest(&depth_);
  if (nest.too_deep()) return ErrorAt(Cur(), "expression nested too deeply");
  ExprPtr e;
  if (IsOp("-") || IsOp("+")) {
    e = Node(IsOp("-") ? ExprKind::kNeg : ExprKind::kPos, Cur().pos);
    Next();
    ASSIGN_OR_RETURN(ExprPtr inner, ParseUnary(false));
    RETURN_IF_ERROR(Add(e.get(), std::move(inner)));
  } else {
    ASSIGN_OR_RETURN(e, ParsePrimary());
  }
  ASSIGN_OR_RETURN(e, ParsePostfix(std::move(e)));
  if (with_filter) {
    ASSIGN_OR_RETURN(e, ParseFilterExpr(std::move(e)));
  }
  return e;
}

Expected<ExprPtr> Parser::ParsePrimary() {
  const Token& t = Cur();
  ExprPtr e = Node(ExprKind::kLiteral, t.pos);
  switch (t.kind) {
    case TokenKind::kName:
      if (t.text == "true" || t.text == "True")
        e->value = Value(true);
      else if (t.text == "false" || t.text == "False")
        e->value = Value(false);
      else if (t.text == "none" || t.text == "None")
        e->value = Value::None();
      else {
        e->kind = ExprKind::kName;
        e->name = t.text;
      }
      Next();
      return e;
    case TokenKind::kString: {
      std::string s;
      while (Cur().kind == TokenKind::kString) {  // adjacent literals concatenate
        s += Cur().text;
        Next();
      }
      e->value = Value(std::move(s));
      return e;
    }
    case TokenKind::kInt:
      e->value = Value(t.int_value);
      Next();
      return e;
    case TokenKind::kFloat:
      e->value = Value(t.float_value);
      Next();
      return e;
    case TokenKind::kOperator:
      if (t.text == "(") {
        Next();
        ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple(true, {}, /*explicit_parens=*/true));
        RETURN_IF_ERROR(ExpectOp(")"));
        return inner;
      }
      if (t.text == "[") {
        e->kind = ExprKind::kList;
        Next();
        while (!IsOp("]")) {
          if (!e->args.empty()) RETURN_IF_ERROR(ExpectOp(","));
          if (IsOp("]")) break;
          ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
          RETURN_IF_ERROR(Add(e.get(), std::move(item)));
        }
        Next();
        return e;
      }
      if (t.text == "{") {
        e->kind = ExprKind::kDict;
        Next();
        while (!IsOp("}")) {
          if (!e->args.empty()) RETURN_IF_ERROR(ExpectOp(","));
          if (IsOp("}")) break;
          ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
          RETURN_IF_ERROR(ExpectOp(":"));
          ASSIGN_OR_RETURN(ExprPtr val, ParseExpression(true));
          RETURN_IF_ERROR(Add(e.get(), std::move(key)));
          RETURN_IF_ERROR(Add(e.get(), std::move(val)));
        }
        Next();
        return e;
      }
      break;
    default: break;
  }
  return Unexpected("an expression");
}

Expected<ExprPtr> Parser::ParsePostfix(ExprPtr e) {
  while (true) {
    if (IsOp(".")) {
      SourcePos pos = Cur().pos;
      Next();
      if (Cur().kind == TokenKind::kName) {
        ExprPtr a = Node(ExprKind::kAttr, pos);
        a->name = Cur().text;
        Next();
        RETURN_IF_ERROR(Add(a.get(), std::move(e)));
        e = std::move(a);
      } else if (Cur().kind == TokenKind::kInt) {
        ExprPtr idx = Node(ExprKind::kLiteral, Cur().pos);
        idx->value = Value(Cur().int_value);
        Next();
        ASSIGN_OR_RETURN(e, Binary(ExprKind::kItem, pos, std::move(e), std::move(idx)));
      } else {
        return Unexpected("an attribute name");
      }
    } else if (IsOp("[")) {
      ASSIGN_OR_RETURN(e, ParseSubscript(std::move(e)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
    } else {
      return e;
    }
  }
}

Expected<ExprPtr> Parser::ParseSubscript(ExprPtr obj) {
  SourcePos pos = Cur().pos;
  Next();  // [
  ExprPtr parts[3];
  int n = 0;
  bool is_slice = false;
  while (true) {
    if (!IsOp(":") && !IsOp("]")) {
      ASSIGN_OR_RETURN(parts[n], ParseExpression(true));
    }
    if (IsOp(":") && n < 2) {
      is_slice = true;
      ++n;
      Next();
      continue;
    }
    break;
  }
  RETURN_IF_ERROR(ExpectOp("]"));
  if (!is_slice) {
    if (!parts[0]) return ErrorAt(Cur(), "empty subscript");
    return Binary(ExprKind::kItem, pos, std::move(obj), std::move(parts[0]));
  }
  ExprPtr s = Node(ExprKind::kSlice, pos);
  RETURN_IF_ERROR(Add(s.get(), std::move(obj)));
  for (auto& p : parts) RETURN_IF_ERROR(Add(s.get(), std::move(p)));
  return s;
}

// `(args, name=value)` appended to `call` (whose args[0] is already set).
Status Parser::ParseCallArgs(Expr* call) {
  RETURN_IF_ERROR(ExpectOp("("));
  bool first = true;
  while (!IsOp(")")) {
    if (!first) RETURN_IF_ERROR(ExpectOp(","));
    first = false;
    if (IsOp(")")) break;
    if (IsOp("*") || IsOp("**")) return ErrorAt(Cur(), "unsupported: *args / **kwargs in calls");
    if (Cur().kind == TokenKind::kName && Peek().kind == TokenKind::kOperator &&
        Peek().text == "=") {
      std::string key = Cur().text;
      Next();
      Next();
      ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
      call->height = std::max(call->height, v->height + 1);
      call->kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!call->kwargs.empty()) return ErrorAt(Cur(), "positional argument follows keyword");
      ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
      RETURN_IF_ERROR(Add(call, std::move(v)));
    }
  }
  Next();
  if (call->height > kMaxExprHeight) return ErrorAt(Cur(), "expression too deeply nested");
  return Status::Ok();
}

Expected<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  ExprPtr c = Node(ExprKind::kCall, Cur().pos);
  RETURN_IF_ERROR(Add(c.get(), std::move(callee)));
  RETURN_IF_ERROR(ParseCallArgs(c.get()));
  return c;
}

// `name[.name](args)`; the filter or test name.
Expected<std::string> Parser::ParseDottedName() {
  ASSIGN_OR_RETURN(std::string n, ExpectIdent());
  while (IsOp(".")) {
    Next();
    ASSIGN_OR_RETURN(std::string part, ExpectIdent());
    n += "." + part;
  }
  return n;
}

Expected<ExprPtr> Parser::ParseFilter(ExprPtr operand) {
  ExprPtr f = Node(ExprKind::kFilter, Cur().pos);
  ASSIGN_OR_RETURN(f->name, ParseDottedName());
  RETURN_IF_ERROR(Add(f.get(), std::move(operand)));
  if (IsOp("(")) RETURN_IF_ERROR(ParseCallArgs(f.get()));
  return f;
}

// `| f | g(x)` (or `f | g` inside {% filter %}) applied to `operand`.
Expected<ExprPtr> Parser::ParseFilterChain(ExprPtr operand, bool leading_pipe) {
  if (leading_pipe) RETURN_IF_ERROR(ExpectOp("|"));
  ASSIGN_OR_RETURN(ExprPtr e, ParseFilter(std::move(operand)));
  while (SkipOp("|")) {
    ASSIGN_OR_RETURN(e, ParseFilter(std::move(e)));
  }
  return e;
}

Expected<ExprPtr> Parser::ParseFilterExpr(ExprPtr e) {
  while (true) {
    if (IsOp("|")) {
      Next();
      ASSIGN_OR_RETURN(e, ParseFilter(std::move(e)));
    } else if (IsName("is")) {
      ASSIGN_OR_RETURN(e, ParseTest(std::move(e)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
    } else {
      return e;
    }
  }
}

Expected<ExprPtr> Parser::ParseTest(ExprPtr operand) {
  SourcePos pos = Cur().pos;
  Next();  // is
  bool negated = SkipName("not");
  ExprPtr t = Node(ExprKind::kTest, pos);
  ASSIGN_OR_RETURN(t->name, ParseDottedName());
  RETURN_IF_ERROR(Add(t.get(), std::move(operand)));
  const Token& c = Cur();
  if (IsOp("(")) {
    RETURN_IF_ERROR(ParseCallArgs(t.get()));
  } else if ((c.kind == TokenKind::kName || c.kind == TokenKind::kString ||
              c.kind == TokenKind::kInt || c.kind == TokenKind::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return ErrorAt(c, "cannot chain multiple tests with 'is'");
    ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    RETURN_IF_ERROR(Add(t.get(), std::move(arg)));
  }
  if (!negated) return t;
  ExprPtr n = Node(ExprKind::kNot, pos);
  RETURN_IF_ERROR(Add(n.get(), std::move(t)));
  return n;
}

}  // namespace brisk::jinja
