// Syntax tree of a parsed Jinja template: plain structs, one node type for
// expressions and one for statements, each with a kind tag. The parser
// (parser.h) builds it, the interpreter (interpreter.h) walks it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/lexer.h"
#include "jinja/value.h"

namespace brisk::jinja {

enum class ExprKind : uint8_t {
  kLiteral,  // value
  kName,     // name
  kList,     // args = items
  kTuple,    // args = items
  kDict,     // args = key0, value0, key1, value1, ...
  kAttr,     // args[0].name
  kItem,     // args[0][args[1]]
  kSlice,    // args[0][args[1]:args[2]:args[3]] (null = omitted)
  kCall,     // args[0](args[1:], kwargs)
  kFilter,   // args[0] | name(args[1:], kwargs); args[0] null inside {% filter %}
  kTest,     // args[0] is name(args[1:], kwargs)
  kNeg,      // -args[0]
  kPos,      // +args[0]
  kNot,      // not args[0]
  kBinary,   // args[0] op args[1]
  kAnd,      // args[0] and args[1]
  kOr,       // args[0] or args[1]
  kCompare,  // args[0] cmp_ops[0] args[1] cmp_ops[1] args[2] ... (chained)
  kCond,     // args[0] if args[1] else args[2] (args[2] null = undefined)
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  SourcePos pos;
  int height = 1;  // 1 + tallest child
  Value value;
  std::string name;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> cmp_ops;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

enum class StmtKind : uint8_t {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // branches (cond null = else)
  kFor,       // for targets in expr [if cond]: body [else: else_body]
  kSet,       // set targets = expr; or set targets[0].attr = expr (attr non-empty)
  kSetBlock,  // {% set targets[0] %}body{% endset %}
  kMacro,     // macro name(params) body
  kBreak,
  kContinue,
  kFilterBlock,  // {% filter expr %}body{% endfilter %}; expr is a filter chain on null
  kWith,         // {% with targets[i] = with_values[i] %}body{% endwith %}
  kGeneration,   // {% generation %}body{% endgeneration %}: renders body
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required (undefined when missing, as in jinja2)
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  SourcePos pos;
  std::string text;                  // kText
  ExprPtr expr;                      // kOutput, kFor iterable, kSet value, kFilterBlock
  ExprPtr cond;                      // kFor filter
  std::vector<std::string> targets;  // kFor / kSet / kSetBlock / kWith names
  std::string attr;                  // kSet on a namespace attribute: targets[0].attr
  bool unpack = false;               // kFor / kSet: targets came as a tuple
  std::vector<std::pair<ExprPtr, StmtList>> branches;  // kIf
  StmtList body;
  StmtList else_body;                // kFor
  std::string name;                  // kMacro
  std::vector<MacroParam> params;    // kMacro
  std::vector<ExprPtr> with_values;  // kWith
};

struct Template {
  StmtList body;
};

}  // namespace brisk::jinja
