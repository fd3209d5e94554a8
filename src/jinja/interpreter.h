// Jinja interpreter: walks a parsed template (ast.h) with a context of
// variables and writes the output. Scoping follows jinja2: a for-loop body
// gets a fresh scope each iteration, `if` does not open one, macros see the
// template's top-level variables and their parameters, and namespace()
// objects are how state escapes a loop. Every run is bounded (RenderLimits):
// output bytes, loop iterations, work (bytes and elements built by
// expressions), evaluation depth and native stack; going past one is
// ResourceExhausted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/limits.h"
#include "jinja/value.h"
#include "util/status.h"

namespace brisk::jinja {

class Interpreter;

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  // Positional `index` if present, else keyword `name`, else nullptr.
  const Value* Get(size_t index, std::string_view name) const;
  const Value* Kw(std::string_view name) const;
};

// A global function (range, namespace, ...) or a template macro.
struct Callable {
  using Builtin = Expected<Value> (*)(Interpreter&, const CallArgs&);
  std::string name;
  Builtin builtin = nullptr;
  const Stmt* macro = nullptr;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  // Renders `tmpl` with the entries of `context` (a dict) as variables.
  Expected<std::string> Render(const Template& tmpl, const Value& context);

  // Counts `units` of work (bytes or elements built); ResourceExhausted past
  // the limit.
  Status Charge(uint64_t units);
  // Counts loop iterations (also used for ranges and repeated lists).
  Status CountIterations(uint64_t n);
  const RenderLimits& limits() const { return limits_; }

  // Calls a macro or builtin function value.
  Expected<Value> Call(const Value& fn, const CallArgs& args);

  // Marks the error being returned as final (raise_exception): no position
  // prefix is added on its way out.
  void MarkErrorLocated() { error_located_ = true; }

 private:
  struct Scope {
    Scope* parent = nullptr;
    std::vector<std::pair<std::string, Value>> vars;

    const Value* Find(std::string_view name) const;
    void Set(std::string name, Value v);
  };
  enum class Flow : uint8_t { kNormal, kBreak, kContinue };

  Status ExecBody(const StmtList& body, Scope& scope);
  Status Exec(const Stmt& s, Scope& scope);
  Status ExecFor(const Stmt& s, Scope& scope);
  // The iterable of a for statement, materialized and `if`-filtered. Out of
  // line so its temporaries stay off the recursive path's frames.
  [[gnu::noinline]] Expected<std::vector<Value>> LoopItems(const Stmt& s, Scope& scope);
  // Binds a loop/set target (a name, or names unpacked from a sequence).
  Status BindTargets(const Stmt& s, const Value& item, Scope& scope);
  Status ExecSet(const Stmt& s, Scope& scope);
  Expected<std::string> Capture(const StmtList& body, Scope& scope);
  Status Emit(std::string_view text);

  Expected<Value> Eval(const Expr& e, Scope& scope);
  Expected<Value> EvalImpl(const Expr& e, Scope& scope);
  Expected<Value> EvalCall(const Expr& e, Scope& scope);
  Expected<CallArgs> EvalArgs(const Expr& e, size_t first, Scope& scope);
  Expected<Value> CallMacro(const Callable& fn, const CallArgs& args);
  Status Locate(Status st, SourcePos pos);
  // Enters one evaluation frame; ResourceExhausted past max_eval_depth or
  // max_stack_bytes. Pair with --depth_ on success.
  Status EnterFrame();

  const RenderLimits limits_;
  std::string* out_ = nullptr;
  Scope* globals_ = nullptr;
  Flow flow_ = Flow::kNormal;
  uint64_t iterations_ = 0;
  uint64_t work_ = 0;
  int depth_ = 0;
  uintptr_t stack_base_ = 0;  // frame address at Render entry (stacks grow down)
  bool error_located_ = false;
};

// Iterates a value as jinja2 does: list items, dict keys, string code
// points; Undefined iterates as empty. Other types are an error.
Expected<std::vector<Value>> Iterate(const Value& v);

}  // namespace brisk::jinja
