// Operators, attribute/item access and global functions (builtins.h).
#include <cmath>
#include <ctime>

#include "jinja/builtins.h"

namespace brisk::jinja {

Status UndefinedError(const Value& v) {
  return InvalidArgument("{}",
                         v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

uint64_t WorkUnits(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString: return v.as_string().size();
    case Value::Kind::kList: return v.as_list().items.size();
    case Value::Kind::kDict: return v.as_dict().items.size();
    default: return 1;
  }
}

namespace {

std::string ObjectDesc(const Value& v) {
  if (v.is_none()) return "None";
  return fmt::format("{} object", v.TypeName());
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t AsInt(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }

}  // namespace

Expected<Value> GetAttr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) return UndefinedError(obj);
  const Value* found = nullptr;
  if (obj.is_dict())
    found = obj.as_dict().Find(name);
  else if (obj.is_namespace())
    found = obj.namespace_attrs().Find(name);
  if (found) return *found;
  return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectDesc(obj), name));
}

Expected<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (key.is_undefined()) return UndefinedError(key);
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().Find(key)) return *v;
  } else if (obj.is_namespace() && key.is_string()) {
    if (const Value* v = obj.namespace_attrs().Find(std::string_view(key.as_string()))) return *v;
  } else if ((obj.is_list() || obj.is_string()) && IsIntLike(key)) {
    int64_t i = AsInt(key);
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      int64_t n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[i];
    } else {
      const std::string& s = obj.as_string();
      std::vector<size_t> offs = Utf8Offsets(s);
      int64_t n = static_cast<int64_t>(offs.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(std::string_view(s).substr(offs[i], offs[i + 1] - offs[i]));
    }
  }
  return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectDesc(obj), key.Str()));
}

Expected<Value> SliceValue(const Value& obj, const Value& start_v, const Value& stop_v,
                           const Value& step_v) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (!obj.is_list() && !obj.is_string()) {
    return InvalidArgument("'{}' object is not subscriptable", obj.TypeName());
  }
  for (const Value* v : {&start_v, &stop_v, &step_v}) {
    if (!v->is_none() && !IsIntLike(*v)) {
      return InvalidArgument("slice indices must be integers or None");
    }
  }
  int64_t step = step_v.is_none() ? 1 : AsInt(step_v);
  if (step == 0) return InvalidArgument("slice step cannot be zero");
  if (step < -INT64_MAX) step = -INT64_MAX;  // same slice, and -step stays representable
  std::vector<size_t> offs;
  int64_t n;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.as_list().items.size());
  } else {
    offs = Utf8Offsets(obj.as_string());
    n = static_cast<int64_t>(offs.size()) - 1;
  }
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = AsInt(v);
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t start = adjust(start_v, step < 0 ? n - 1 : 0);
  int64_t stop = adjust(stop_v, step < 0 ? -1 : n);
  // Indices visited: start, start+step, ... while before stop (no overflow:
  // the count is computed first).
  int64_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) count = (start - stop - 1) / (-step) + 1;
  if (obj.is_list()) {
    const auto& items = obj.as_list().items;
    std::vector<Value> out;
    out.reserve(count);
    for (int64_t k = 0; k < count; ++k) out.push_back(items[start + k * step]);
    return Value::List(std::move(out), obj.as_list().is_tuple);
  }
  const std::string& s = obj.as_string();
  std::string out;
  if (step == 1) {
    if (start < stop) out = s.substr(offs[start], offs[stop] - offs[start]);
  } else {
    for (int64_t k = 0; k < count; ++k) {
      int64_t i = start + k * step;
      out.append(s, offs[i], offs[i + 1] - offs[i]);
    }
  }
  return Value(std::move(out));
}

namespace {

Status TypeError(const char* op, const Value& a, const Value& b) {
  if (a.is_string() && std::string_view(op) == "+") {
    return InvalidArgument("can only concatenate str (not \"{}\") to str", b.TypeName());
  }
  return InvalidArgument("unsupported operand type(s) for {}: '{}' and '{}'", op, a.TypeName(),
                         b.TypeName());
}

Expected<Value> Repeat(const Value& seq, int64_t times, size_t max_bytes) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > max_bytes / s.size()) {
      return ResourceExhausted("string repetition over {} bytes", max_bytes);
    }
    std::string out;
    out.reserve(s.size() * times);
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.as_list().items;
  if (!items.empty() && static_cast<uint64_t>(times) > (max_bytes / 8) / items.size()) {
    return ResourceExhausted("list repetition too large");
  }
  std::vector<Value> out;
  out.reserve(items.size() * times);
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::List(std::move(out), seq.as_list().is_tuple);
}

Expected<Value> Arith(BinaryOp op, const Value& a, const Value& b) {
  static constexpr const char* kNames[] = {"+", "-", "*", "/", "//", "%", "**", "~"};
  const char* name = kNames[static_cast<int>(op)];
  if (!a.is_number() || !b.is_number()) return TypeError(name, a, b);
  bool ints = IsIntLike(a) && IsIntLike(b);
  if (ints) {
    int64_t x = AsInt(a), y = AsInt(b), r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        if (__builtin_add_overflow(x, y, &r)) return InvalidArgument("integer overflow");
        return Value(r);
      case BinaryOp::kSub:
        if (__builtin_sub_overflow(x, y, &r)) return InvalidArgument("integer overflow");
        return Value(r);
      case BinaryOp::kMul:
        if (__builtin_mul_overflow(x, y, &r)) return InvalidArgument("integer overflow");
        return Value(r);
      case BinaryOp::kDiv:
        if (y == 0) return InvalidArgument("division by zero");
        return Value(static_cast<double>(x) / static_cast<double>(y));
      case BinaryOp::kFloorDiv:
      case BinaryOp::kMod: {
        if (y == 0) return InvalidArgument("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) return InvalidArgument("integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        return Value(op == BinaryOp::kFloorDiv ? q : m);
      }
      case BinaryOp::kPow: {
        if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
        int64_t result = 1, base = x;
        while (y > 0) {
          if (y & 1) {
            if (__builtin_mul_overflow(result, base, &result)) {
              return InvalidArgument("integer overflow");
            }
          }
          y >>= 1;
          if (y > 0 && __builtin_mul_overflow(base, base, &base)) {
            return InvalidArgument("integer overflow");
          }
        }
        return Value(result);
      }
      default: break;
    }
  }
  double x = a.as_double(), y = b.as_double();
  switch (op) {
    case BinaryOp::kAdd: return Value(x + y);
    case BinaryOp::kSub: return Value(x - y);
    case BinaryOp::kMul: return Value(x * y);
    case BinaryOp::kDiv:
      if (y == 0) return InvalidArgument("float division by zero");
      return Value(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0) return InvalidArgument("float floor division by zero");
      return Value(std::floor(x / y));
    case BinaryOp::kMod: {
      if (y == 0) return InvalidArgument("float modulo");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value(m);
    }
    case BinaryOp::kPow: return Value(std::pow(x, y));
    default: return Internal("bad arithmetic operator");
  }
}

}  // namespace

Expected<Value> ApplyBinary(BinaryOp op, const Value& a, const Value& b, size_t max_bytes) {
  if (op == BinaryOp::kConcat) {
    std::string sa = a.is_string() ? std::string() : a.Str();
    std::string sb = b.is_string() ? std::string() : b.Str();
    const std::string& x = a.is_string() ? a.as_string() : sa;
    const std::string& y = b.is_string() ? b.as_string() : sb;
    if (x.size() + y.size() > max_bytes)
      return ResourceExhausted("string over {} bytes", max_bytes);
    std::string s;
    s.reserve(x.size() + y.size());
    s += x;
    s += y;
    return Value(std::move(s));
  }
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  switch (op) {
    case BinaryOp::kAdd:
      if (a.is_string() && b.is_string()) {
        if (a.as_string().size() + b.as_string().size() > max_bytes) {
          return ResourceExhausted("string over {} bytes", max_bytes);
        }
        std::string s;
        s.reserve(a.as_string().size() + b.as_string().size());
        s += a.as_string();
        s += b.as_string();
        return Value(std::move(s));
      }
      if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
        std::vector<Value> items = a.as_list().items;
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::List(std::move(items), a.as_list().is_tuple);
      }
      return Arith(op, a, b);
    case BinaryOp::kMul:
      if ((a.is_string() || a.is_list()) && IsIntLike(b)) return Repeat(a, AsInt(b), max_bytes);
      if ((b.is_string() || b.is_list()) && IsIntLike(a)) return Repeat(b, AsInt(a), max_bytes);
      return Arith(op, a, b);
    case BinaryOp::kMod:
      if (a.is_string()) {
        ASSIGN_OR_RETURN(std::string s, PercentFormat(a.as_string(), b));
        return Value(std::move(s));
      }
      return Arith(op, a, b);
    default: return Arith(op, a, b);
  }
}

Expected<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return InvalidArgument("'in <string>' requires string as left operand, not {}",
                               item.TypeName());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items) {
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict: return container.as_dict().Find(item) != nullptr;
    default: return InvalidArgument("argument of type '{}' is not iterable", container.TypeName());
  }
}

Expected<bool> ApplyCompare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq: return Equals(a, b);
    case CompareOp::kNe: return !Equals(a, b);
    case CompareOp::kIn: return Contains(b, a);
    case CompareOp::kNotIn: {
      ASSIGN_OR_RETURN(bool in, Contains(b, a));
      return !in;
    }
    default: break;
  }
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  switch (op) {
    case CompareOp::kLt: return Less(a, b);
    case CompareOp::kGt: return Less(b, a);
    case CompareOp::kLe: {
      ASSIGN_OR_RETURN(bool lt, Less(a, b));
      return lt || Equals(a, b);
    }
    case CompareOp::kGe: {
      ASSIGN_OR_RETURN(bool gt, Less(b, a));
      return gt || Equals(a, b);
    }
    default: return Internal("bad comparison");
  }
}

// ------------------------------------------------------------------ globals

namespace {

Expected<Value> Range(Interpreter& in, const CallArgs& a) {
  if (a.args.empty() || a.args.size() > 3) return InvalidArgument("range expects 1 to 3 arguments");
  for (const Value& v : a.args) {
    if (!IsIntLike(v))
      return InvalidArgument("'{}' object cannot be interpreted as an integer", v.TypeName());
  }
  int64_t start = 0, stop, step = 1;
  if (a.args.size() == 1) {
    stop = AsInt(a.args[0]);
  } else {
    start = AsInt(a.args[0]);
    stop = AsInt(a.args[1]);
    if (a.args.size() == 3) step = AsInt(a.args[2]);
  }
  if (step == 0) return InvalidArgument("range() arg 3 must not be zero");
  // Count without overflow: number of steps from start towards stop.
  long double span =
      step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  long double count = span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<long double>(step)));
  if (count > static_cast<long double>(in.limits().max_loop_iterations)) {
    return ResourceExhausted("range of {} items is over the loop limit",
                             static_cast<double>(count));
  }
  RETURN_IF_ERROR(in.CountIterations(static_cast<uint64_t>(count)));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < static_cast<uint64_t>(count); ++i) {
    items.emplace_back(start + static_cast<int64_t>(i) * step);
  }
  return Value::List(std::move(items));
}

Expected<DictData> KwargsDict(const CallArgs& a, const char* fn) {
  DictData d;
  if (a.args.size() > 1) return InvalidArgument("{} takes at most 1 positional argument", fn);
  if (!a.args.empty()) {
    if (!a.args[0].is_dict()) return InvalidArgument("{} expects a mapping", fn);
    d = a.args[0].as_dict();
  }
  for (const auto& [k, v] : a.kwargs) d.Set(Value(k), v);
  return d;
}

Expected<Value> MakeNamespace(Interpreter&, const CallArgs& a) {
  ASSIGN_OR_RETURN(DictData d, KwargsDict(a, "namespace"));
  for (const auto& [k, v] : d.items) {
    if (v.contains_namespace()) {
      return InvalidArgument("namespace objects cannot be stored in a namespace");
    }
  }
  return Value::Namespace(std::move(d));
}

Expected<Value> MakeDict(Interpreter&, const CallArgs& a) {
  ASSIGN_OR_RETURN(DictData d, KwargsDict(a, "dict"));
  return Value::Dict(std::move(d));
}

Expected<Value> RaiseException(Interpreter& in, const CallArgs& a) {
  std::string msg = a.args.empty() ? "raise_exception called" : a.args[0].Str();
  in.MarkErrorLocated();
  return InvalidArgument("{}", msg);
}

Expected<Value> StrftimeNow(Interpreter& in, const CallArgs& a) {
  const Value* f = a.Get(0, "format");
  if (!f || !f->is_string()) return InvalidArgument("strftime_now expects a format string");
  std::time_t now = in.limits().now_unix_seconds
                        ? static_cast<std::time_t>(*in.limits().now_unix_seconds)
                        : std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[512];
  size_t n = std::strftime(buf, sizeof(buf), f->as_string().c_str(), &tm);
  return Value(std::string(buf, n));
}

Value Builtin(const char* name, Callable::Builtin fn) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->builtin = fn;
  return Value::Function(std::move(c));
}

}  // namespace

DictData MakeGlobals() {
  DictData g;
  g.items = {
      {Value("range"), Builtin("range", Range)},
      {Value("namespace"), Builtin("namespace", MakeNamespace)},
      {Value("dict"), Builtin("dict", MakeDict)},
      {Value("raise_exception"), Builtin("raise_exception", RaiseException)},
      {Value("strftime_now"), Builtin("strftime_now", StrftimeNow)},
  };
  return g;
}

}  // namespace brisk::jinja
