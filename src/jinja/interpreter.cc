#include "jinja/interpreter.h"

#include "jinja/builtins.h"

namespace brisk::jinja {

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < args.size()) return &args[index];
  return Kw(name);
}

const Value* CallArgs::Kw(std::string_view name) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* Interpreter::Scope::Find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Interpreter::Scope::Set(std::string name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(std::move(name), std::move(v));
}

[[gnu::noinline]] Expected<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>{};
    case Value::Kind::kList: return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().items.size());
      for (const auto& kv : v.as_dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::kString: {
      const std::string& s = v.as_string();
      std::vector<size_t> offs = Utf8Offsets(s);
      std::vector<Value> chars;
      chars.reserve(offs.size() - 1);
      for (size_t i = 0; i + 1 < offs.size(); ++i) {
        chars.emplace_back(std::string_view(s).substr(offs[i], offs[i + 1] - offs[i]));
      }
      return chars;
    }
    default: return InvalidArgument("'{}' object is not iterable", v.TypeName());
  }
}

Expected<std::string> Interpreter::Render(const Template& tmpl, const Value& context) {
  std::string out;
  out_ = &out;
  Scope builtins;
  for (auto& [k, v] : MakeGlobals().items) builtins.vars.emplace_back(k.as_string(), v);
  Scope globals;
  globals.parent = &builtins;
  if (context.is_dict()) {
    for (const auto& [k, v] : context.as_dict().items) globals.vars.emplace_back(k.Str(), v);
  }
  globals_ = &globals;
  stack_base_ = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  Status st = ExecBody(tmpl.body, globals);
  globals_ = nullptr;
  out_ = nullptr;
  if (!st.ok()) return st;
  return out;
}

Status Interpreter::Charge(uint64_t units) {
  work_ += units;
  if (work_ > limits_.max_work) {
    return ResourceExhausted("template exceeded its work limit ({} units)", limits_.max_work);
  }
  return Status::Ok();
}

Status Interpreter::CountIterations(uint64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_loop_iterations) {
    return ResourceExhausted("template exceeded {} loop iterations", limits_.max_loop_iterations);
  }
  return Status::Ok();
}

Status Interpreter::EnterFrame() {
  uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  size_t used = stack_base_ > here ? stack_base_ - here : 0;
  if (depth_ + 1 > limits_.max_eval_depth || used > limits_.max_stack_bytes) {
    return ResourceExhausted("template nesting too deep ({} frames, {} KiB of stack)", depth_,
                             used >> 10);
  }
  ++depth_;
  return Status::Ok();
}

Status Interpreter::Locate(Status st, SourcePos pos) {
  if (error_located_) return st;
  error_located_ = true;
  return Status(st.code(), fmt::format("{}:{}: {}", pos.line, pos.col, st.message()));
}

Status Interpreter::Emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    return ResourceExhausted("rendered template exceeds {} bytes", limits_.max_output_bytes);
  }
  out_->append(text);
  return Status::Ok();
}

Expected<std::string> Interpreter::Capture(const StmtList& body, Scope& scope) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  Status st = ExecBody(body, scope);
  out_ = saved;
  if (!st.ok()) return st;
  return buf;
}

// ------------------------------------------------------------------ statements

Status Interpreter::ExecBody(const StmtList& body, Scope& scope) {
  for (const StmtPtr& s : body) {
    RETURN_IF_ERROR(Exec(*s, scope));
    if (flow_ != Flow::kNormal) break;
  }
  return Status::Ok();
}

namespace {

// Applies the filters of a {% filter %} / {% set x | f %} chain to `input`
// (the chain's innermost operand is null).
Expected<Value> ApplyChain(Interpreter& in, const Expr& chain, Value input,
                           const std::vector<CallArgs>& args, size_t* next) {
  Value operand = std::move(input);
  if (chain.args[0]) {
    ASSIGN_OR_RETURN(operand, ApplyChain(in, *chain.args[0], std::move(operand), args, next));
  }
  return ApplyFilter(in, chain.name, operand, args[(*next)++]);
}

}  // namespace

Status Interpreter::Exec(const Stmt& s, Scope& scope) {
  if (Status f = EnterFrame(); !f.ok()) return Locate(std::move(f), s.pos);
  Status st;
  switch (s.kind) {
    case StmtKind::kText: st = Emit(s.text); break;
    case StmtKind::kOutput: {
      auto v = Eval(*s.expr, scope);
      if (!v.ok())
        st = v.status();
      else
        st = v->is_string() ? Emit(v->as_string()) : Emit(v->Str());
      break;
    }
    case StmtKind::kIf:
      for (const auto& [cond, body] : s.branches) {
        bool take = true;
        if (cond) {
          auto c = Eval(*cond, scope);
          if (!c.ok()) {
            st = c.status();
            break;
          }
          take = c->Truthy();
        }
        if (take) {
          st = ExecBody(body, scope);
          break;
        }
      }
      break;
    case StmtKind::kFor: st = ExecFor(s, scope); break;
    case StmtKind::kSet: st = ExecSet(s, scope); break;
    case StmtKind::kSetBlock:
    case StmtKind::kFilterBlock: {
      auto text = Capture(s.body, scope);
      if (!text.ok()) {
        st = text.status();
        break;
      }
      Value v(std::move(text).value());
      if (s.expr) {
        // Evaluate each filter's arguments (innermost first), then apply.
        std::vector<CallArgs> args;
        std::vector<const Expr*> chain;
        for (const Expr* f = s.expr.get(); f; f = f->args[0].get()) chain.push_back(f);
        for (auto it = chain.rbegin(); it != chain.rend() && st.ok(); ++it) {
          auto a = EvalArgs(**it, 1, scope);
          if (a.ok())
            args.push_back(std::move(a).value());
          else
            st = a.status();
        }
        if (!st.ok()) break;
        size_t next = 0;
        auto r = ApplyChain(*this, *s.expr, std::move(v), args, &next);
        if (!r.ok()) {
          st = r.status();
          break;
        }
        v = std::move(r).value();
      }
      if (s.kind == StmtKind::kSetBlock)
        scope.Set(s.targets[0], std::move(v));
      else
        st = Emit(v.Str());
      break;
    }
    case StmtKind::kMacro: {
      auto fn = std::make_shared<Callable>();
      fn->name = s.name;
      fn->macro = &s;
      scope.Set(s.name, Value::Function(std::move(fn)));
      break;
    }
    case StmtKind::kBreak: flow_ = Flow::kBreak; break;
    case StmtKind::kContinue: flow_ = Flow::kContinue; break;
    case StmtKind::kWith: {
      Scope inner;
      inner.parent = &scope;
      for (size_t i = 0; i < s.targets.size() && st.ok(); ++i) {
        auto v = Eval(*s.with_values[i], scope);
        if (v.ok())
          inner.Set(s.targets[i], std::move(v).value());
        else
          st = v.status();
      }
      if (st.ok()) st = ExecBody(s.body, inner);
      break;
    }
    case StmtKind::kGeneration: {
      // HF's AssistantTracker renders the body as a call block: its own scope.
      Scope inner;
      inner.parent = &scope;
      st = ExecBody(s.body, inner);
      break;
    }
  }
  --depth_;
  if (!st.ok()) return Locate(std::move(st), s.pos);
  return st;
}

namespace {

// The `loop` object of iteration i. Out of line: its temporaries would
// otherwise sit in ExecFor's frame on every level of recursion.
[[gnu::noinline]] Value LoopInfo(const std::vector<Value>& items, int64_t i) {
  static const Value keys[] = {"index",  "index0",   "revindex", "revindex0", "first", "last",
                               "length", "previtem", "nextitem", "depth",     "depth0"};
  const int64_t n = static_cast<int64_t>(items.size());
  DictData loop;
  loop.items.reserve(11);
  loop.items.emplace_back(keys[0], Value(i + 1));
  loop.items.emplace_back(keys[1], Value(i));
  loop.items.emplace_back(keys[2], Value(n - i));
  loop.items.emplace_back(keys[3], Value(n - i - 1));
  loop.items.emplace_back(keys[4], Value(i == 0));
  loop.items.emplace_back(keys[5], Value(i == n - 1));
  loop.items.emplace_back(keys[6], Value(n));
  loop.items.emplace_back(keys[7],
                          i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
  loop.items.emplace_back(keys[8],
                          i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item"));
  loop.items.emplace_back(keys[9], Value(1));
  loop.items.emplace_back(keys[10], Value(0));
  return Value::Dict(std::move(loop));
}

}  // namespace

Status Interpreter::BindTargets(const Stmt& s, const Value& item, Scope& scope) {
  if (!s.unpack) {
    scope.Set(s.targets[0], item);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(std::vector<Value> parts, Iterate(item));
  if (parts.size() != s.targets.size()) {
    return InvalidArgument("cannot unpack {} values into {} names", parts.size(), s.targets.size());
  }
  for (size_t i = 0; i < parts.size(); ++i) scope.Set(s.targets[i], std::move(parts[i]));
  return Status::Ok();
}

Expected<std::vector<Value>> Interpreter::LoopItems(const Stmt& s, Scope& scope) {
  ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr, scope));
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(iterable));
  if (!s.cond) return items;
  std::vector<Value> kept;
  for (Value& item : items) {
    RETURN_IF_ERROR(CountIterations(1));
    Scope tmp;
    tmp.parent = &scope;
    RETURN_IF_ERROR(BindTargets(s, item, tmp));
    ASSIGN_OR_RETURN(Value keep, Eval(*s.cond, tmp));
    if (keep.Truthy()) kept.push_back(std::move(item));
  }
  return kept;
}

Status Interpreter::ExecFor(const Stmt& s, Scope& scope) {
  ASSIGN_OR_RETURN(std::vector<Value> items, LoopItems(s, scope));
  if (items.empty()) return ExecBody(s.else_body, scope);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(CountIterations(1));
    Scope iter;
    iter.parent = &scope;
    RETURN_IF_ERROR(BindTargets(s, items[i], iter));
    iter.Set("loop", LoopInfo(items, i));
    RETURN_IF_ERROR(ExecBody(s.body, iter));
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return Status::Ok();
}

Status Interpreter::ExecSet(const Stmt& s, Scope& scope) {
  ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
  if (!s.attr.empty()) {
    const Value* ns = scope.Find(s.targets[0]);
    if (!ns || !ns->is_namespace()) {
      return InvalidArgument("cannot assign attribute on non-namespace object '{}'", s.targets[0]);
    }
    if (v.contains_namespace()) {
      return InvalidArgument("namespace objects cannot be stored in a namespace");
    }
    if (v.depth() >= kMaxValueDepth) {
      return InvalidArgument("value nested deeper than {} levels", kMaxValueDepth);
    }
    ns->namespace_attrs().Set(Value(s.attr), std::move(v));
    return Status::Ok();
  }
  return BindTargets(s, v, scope);
}

// ------------------------------------------------------------------ expressions

Expected<Value> Interpreter::Eval(const Expr& e, Scope& scope) {
  if (Status f = EnterFrame(); !f.ok()) return Locate(std::move(f), e.pos);
  auto r = EvalImpl(e, scope);
  --depth_;
  if (!r.ok()) return Locate(r.status(), e.pos);
  if (r->is_list() || r->is_dict()) {
    // Bounded nesting keeps printing, comparing and freeing values shallow;
    // keeping namespaces out of containers rules out reference cycles.
    if (r->depth() > kMaxValueDepth) {
      return Locate(InvalidArgument("value nested deeper than {} levels", kMaxValueDepth), e.pos);
    }
    if (r->contains_namespace()) {
      return Locate(InvalidArgument("namespace objects cannot be stored in lists or dicts"), e.pos);
    }
  }
  return r;
}

Expected<CallArgs> Interpreter::EvalArgs(const Expr& e, size_t first, Scope& scope) {
  CallArgs a;
  for (size_t i = first; i < e.args.size(); ++i) {
    ASSIGN_OR_RETURN(Value v, Eval(*e.args[i], scope));
    a.args.push_back(std::move(v));
  }
  for (const auto& [k, ex] : e.kwargs) {
    ASSIGN_OR_RETURN(Value v, Eval(*ex, scope));
    a.kwargs.emplace_back(k, std::move(v));
  }
  return a;
}

Expected<Value> Interpreter::EvalImpl(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.value;
    case ExprKind::kName: {
      const Value* v = scope.Find(e.name);
      if (v) return *v;
      return Value::Undefined(fmt::format("'{}' is undefined", e.name));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const ExprPtr& a : e.args) {
        ASSIGN_OR_RETURN(Value v, Eval(*a, scope));
        items.push_back(std::move(v));
      }
      RETURN_IF_ERROR(Charge(items.size()));
      return Value::List(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      DictData d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        ASSIGN_OR_RETURN(Value k, Eval(*e.args[i], scope));
        ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1], scope));
        if (k.is_list() && !k.as_list().is_tuple) return InvalidArgument("unhashable type: 'list'");
        if (k.is_dict() || k.is_undefined()) {
          return InvalidArgument("unhashable type: '{}'", k.TypeName());
        }
        d.Set(std::move(k), std::move(v));
      }
      RETURN_IF_ERROR(Charge(d.items.size()));
      return Value::Dict(std::move(d));
    }
    case ExprKind::kAttr: {
      ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
      return GetAttr(obj, e.name);
    }
    case ExprKind::kItem: {
      ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
      ASSIGN_OR_RETURN(Value key, Eval(*e.args[1], scope));
      return GetItem(obj, key);
    }
    case ExprKind::kSlice: {
      ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], scope));
      Value parts[3] = {Value::None(), Value::None(), Value::None()};
      for (int i = 0; i < 3; ++i) {
        if (e.args[i + 1]) {
          ASSIGN_OR_RETURN(parts[i], Eval(*e.args[i + 1], scope));
        }
      }
      ASSIGN_OR_RETURN(Value r, SliceValue(obj, parts[0], parts[1], parts[2]));
      RETURN_IF_ERROR(Charge(WorkUnits(r)));
      return r;
    }
    case ExprKind::kCall: return EvalCall(e, scope);
    case ExprKind::kFilter: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
      ASSIGN_OR_RETURN(CallArgs a, EvalArgs(e, 1, scope));
      ASSIGN_OR_RETURN(Value r, ApplyFilter(*this, e.name, v, a));
      RETURN_IF_ERROR(Charge(WorkUnits(r)));
      return r;
    }
    case ExprKind::kTest: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
      ASSIGN_OR_RETURN(CallArgs a, EvalArgs(e, 1, scope));
      ASSIGN_OR_RETURN(bool r, ApplyTest(*this, e.name, v, a));
      return Value(r);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
      if (v.is_undefined()) return UndefinedError(v);
      bool neg = e.kind == ExprKind::kNeg;
      if (v.is_float()) return Value(neg ? -v.as_float() : v.as_float());
      if (v.is_int() || v.is_bool()) {
        int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
        if (neg && x == INT64_MIN) return InvalidArgument("integer overflow");
        return Value(neg ? -x : x);
      }
      return InvalidArgument("bad operand type for unary {}: '{}'", neg ? '-' : '+', v.TypeName());
    }
    case ExprKind::kNot: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
      return Value(!v.Truthy());
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      ASSIGN_OR_RETURN(Value l, Eval(*e.args[0], scope));
      if (l.Truthy() == (e.kind == ExprKind::kOr)) return l;
      return Eval(*e.args[1], scope);
    }
    case ExprKind::kBinary: {
      ASSIGN_OR_RETURN(Value a, Eval(*e.args[0], scope));
      ASSIGN_OR_RETURN(Value b, Eval(*e.args[1], scope));
      ASSIGN_OR_RETURN(Value r, ApplyBinary(e.op, a, b, limits_.max_output_bytes));
      RETURN_IF_ERROR(Charge(WorkUnits(r)));
      return r;
    }
    case ExprKind::kCompare: {
      ASSIGN_OR_RETURN(Value left, Eval(*e.args[0], scope));
      for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
        ASSIGN_OR_RETURN(Value right, Eval(*e.args[i + 1], scope));
        ASSIGN_OR_RETURN(bool ok, ApplyCompare(e.cmp_ops[i], left, right));
        if (!ok) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::kCond: {
      ASSIGN_OR_RETURN(Value c, Eval(*e.args[1], scope));
      if (c.Truthy()) return Eval(*e.args[0], scope);
      if (e.args[2]) return Eval(*e.args[2], scope);
      return Value::Undefined("the inline if-expression evaluated to false and had no else");
    }
  }
  return Internal("unknown expression kind");
}

Expected<Value> Interpreter::EvalCall(const Expr& e, Scope& scope) {
  const Expr& callee = *e.args[0];
  Value fn;
  if (callee.kind == ExprKind::kAttr) {
    ASSIGN_OR_RETURN(Value obj, Eval(*callee.args[0], scope));
    if (obj.is_undefined()) return UndefinedError(obj);
    if (HasMethod(obj, callee.name)) {
      ASSIGN_OR_RETURN(CallArgs a, EvalArgs(e, 1, scope));
      ASSIGN_OR_RETURN(Value r, CallMethod(*this, obj, callee.name, a));
      RETURN_IF_ERROR(Charge(WorkUnits(r)));
      return r;
    }
    ASSIGN_OR_RETURN(fn, GetAttr(obj, callee.name));
  } else {
    ASSIGN_OR_RETURN(fn, Eval(callee, scope));
  }
  if (fn.is_undefined()) return UndefinedError(fn);
  if (!fn.is_callable()) return InvalidArgument("'{}' object is not callable", fn.TypeName());
  ASSIGN_OR_RETURN(CallArgs a, EvalArgs(e, 1, scope));
  ASSIGN_OR_RETURN(Value r, Call(fn, a));
  RETURN_IF_ERROR(Charge(WorkUnits(r)));
  return r;
}

Expected<Value> Interpreter::Call(const Value& fn, const CallArgs& args) {
  const Callable& c = fn.as_callable();
  if (c.builtin) return c.builtin(*this, args);
  return CallMacro(c, args);
}

Expected<Value> Interpreter::CallMacro(const Callable& fn, const CallArgs& args) {
  const Stmt& m = *fn.macro;
  if (args.args.size() > m.params.size()) {
    return InvalidArgument("macro '{}' takes not more than {} argument(s)", m.name,
                           m.params.size());
  }
  for (const auto& [k, v] : args.kwargs) {
    bool known = false;
    for (const MacroParam& p : m.params) known = known || p.name == k;
    if (!known) return InvalidArgument("macro '{}' takes no keyword argument '{}'", m.name, k);
  }
  RETURN_IF_ERROR(EnterFrame());
  Scope ms;
  ms.parent = globals_;
  Status st;
  for (size_t i = 0; i < m.params.size() && st.ok(); ++i) {
    const MacroParam& p = m.params[i];
    if (const Value* v = args.Get(i, p.name)) {
      ms.Set(p.name, *v);
    } else if (p.default_value) {
      auto v = Eval(*p.default_value, ms);
      if (v.ok())
        ms.Set(p.name, std::move(v).value());
      else
        st = v.status();
    } else {
      ms.Set(p.name, Value::Undefined(fmt::format("parameter '{}' was not provided", p.name)));
    }
  }
  Expected<std::string> text = st.ok() ? Capture(m.body, ms) : Expected<std::string>(st);
  --depth_;
  flow_ = Flow::kNormal;
  if (!text.ok()) return text.status();
  return Value(std::move(text).value());
}

}  // namespace brisk::jinja
