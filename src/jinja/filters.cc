// Filters and tests (builtins.h). Semantics follow jinja2 3.x; tojson
// is HF transformers' override: json.dumps(x, ensure_ascii=False, indent=...,
// separators=..., sort_keys=...), no HTML escaping.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "jinja/builtins.h"

namespace brisk::jinja {
namespace {

Expected<int64_t> Len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(Utf8Length(v.as_string()));
    case Value::Kind::kList: return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().items.size());
    default: return InvalidArgument("object of type '{}' has no len()", v.TypeName());
  }
}

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string AsciiUpper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// jinja2's title filter: capitalize the start of each run split on
// whitespace, '-', '(', '{', '[', '<'.
std::string JinjaTitle(const std::string& s) {
  std::string out;
  bool at_start = true;
  for (char c : s) {
    bool sep = std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '{' ||
               c == '[' || c == '<';
    if (sep) {
      out.push_back(c);
      at_start = true;
    } else {
      out.push_back(static_cast<char>(at_start ? std::toupper(static_cast<unsigned char>(c))
                                               : std::tolower(static_cast<unsigned char>(c))));
      at_start = false;
    }
  }
  return out;
}

// Attribute path "a.b.0" as used by map/sort/selectattr(attribute=...).
Expected<Value> GetPath(const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    int64_t index = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
    bool digits = !part.empty() && ec == std::errc() && end == part.data() + part.size();
    if (digits && cur.is_list()) {
      ASSIGN_OR_RETURN(cur, GetItem(cur, Value(index)));
    } else {
      if (cur.is_undefined()) return cur;
      ASSIGN_OR_RETURN(cur, GetAttr(cur, part));
    }
    b = e + 1;
  }
  return cur;
}

// Key used by sort/unique/min/max: lowercased strings unless case_sensitive.
Expected<Value> SortKey(const Value& v, const Value* attribute, bool case_sensitive) {
  Value k = v;
  if (attribute && !attribute->is_none()) {
    ASSIGN_OR_RETURN(k, GetPath(v, attribute->Str()));
  }
  if (!case_sensitive && k.is_string()) k = Value(AsciiLower(k.as_string()));
  return k;
}

bool ArgBool(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = a.Get(i, name);
  return v ? v->Truthy() : dflt;
}

// select/reject/selectattr/rejectattr. `first_test_arg` is where the test
// name sits in args; without a test, truthiness decides.
Expected<Value> SelectImpl(Interpreter& in, const Value& seq, const CallArgs& a, bool by_attr,
                           bool keep_if) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq));
  size_t test_pos = by_attr ? 1 : 0;
  std::string attr;
  if (by_attr) {
    if (a.args.empty()) return InvalidArgument("selectattr/rejectattr need an attribute name");
    attr = a.args[0].Str();
  }
  std::string test;
  CallArgs test_args;
  if (a.args.size() > test_pos) {
    test = a.args[test_pos].Str();
    test_args.args.assign(a.args.begin() + test_pos + 1, a.args.end());
  }
  std::vector<Value> out;
  for (const Value& item : items) {
    RETURN_IF_ERROR(in.CountIterations(1));
    Value subject = item;
    if (by_attr) {
      ASSIGN_OR_RETURN(subject, GetPath(item, attr));
    }
    bool pass;
    if (test.empty()) {
      pass = subject.Truthy();
    } else {
      ASSIGN_OR_RETURN(pass, ApplyTest(in, test, subject, test_args));
    }
    if (pass == keep_if) out.push_back(item);
  }
  return Value::List(std::move(out));
}

Expected<Value> MapImpl(Interpreter& in, const Value& seq, const CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq));
  std::vector<Value> out;
  out.reserve(items.size());
  if (const Value* attr = a.Kw("attribute")) {
    const Value* dflt = a.Kw("default");
    for (const Value& item : items) {
      RETURN_IF_ERROR(in.CountIterations(1));
      ASSIGN_OR_RETURN(Value v, GetPath(item, attr->Str()));
      if (v.is_undefined() && dflt) v = *dflt;
      out.push_back(std::move(v));
    }
    return Value::List(std::move(out));
  }
  if (a.args.empty()) return InvalidArgument("map needs a filter name or attribute=");
  std::string filter = a.args[0].Str();
  CallArgs fargs;
  fargs.args.assign(a.args.begin() + 1, a.args.end());
  fargs.kwargs = a.kwargs;
  for (const Value& item : items) {
    RETURN_IF_ERROR(in.CountIterations(1));
    ASSIGN_OR_RETURN(Value v, ApplyFilter(in, filter, item, fargs));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
}

Expected<Value> SortImpl(Interpreter& in, const Value& seq, const CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq));
  bool reverse = ArgBool(a, 0, "reverse", false);
  bool cs = ArgBool(a, 1, "case_sensitive", false);
  const Value* attribute = a.Get(2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    ASSIGN_OR_RETURN(Value k, SortKey(item, attribute, cs));
    keyed.emplace_back(std::move(k), std::move(item));
  }
  RETURN_IF_ERROR(in.CountIterations(keyed.size()));
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (!err.ok()) return false;
    auto r = reverse ? Less(y.first, x.first) : Less(x.first, y.first);
    if (!r.ok()) {
      err = r.status();
      return false;
    }
    return *r;
  });
  RETURN_IF_ERROR(err);
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::List(std::move(out));
}

Expected<Value> MinMax(const Value& seq, const CallArgs& a, bool want_max) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  bool cs = ArgBool(a, 0, "case_sensitive", false);
  const Value* attribute = a.Get(1, "attribute");
  size_t best = 0;
  ASSIGN_OR_RETURN(Value best_key, SortKey(items[0], attribute, cs));
  for (size_t i = 1; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(Value k, SortKey(items[i], attribute, cs));
    ASSIGN_OR_RETURN(bool better, want_max ? Less(best_key, k) : Less(k, best_key));
    if (better) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Expected<Value> ToJsonFilter(Interpreter& in, const Value& v, const CallArgs& a) {
  JsonOptions opts;
  opts.ensure_ascii = ArgBool(a, 0, "ensure_ascii", false);
  const Value* indent = a.Get(1, "indent");
  if (indent && !indent->is_none()) {
    if (indent->is_string())
      opts.indent = indent->as_string();
    else if (indent->is_int())
      opts.indent = std::string(std::max<int64_t>(0, std::min<int64_t>(indent->as_int(), 64)), ' ');
    else
      return InvalidArgument("tojson: indent must be an int or a string");
    opts.item_separator = ",";
  }
  const Value* seps = a.Get(2, "separators");
  if (seps && !seps->is_none()) {
    if (!seps->is_list() || seps->as_list().items.size() != 2) {
      return InvalidArgument("tojson: separators must be a pair of strings");
    }
    opts.item_separator = seps->as_list().items[0].Str();
    opts.key_separator = seps->as_list().items[1].Str();
  }
  opts.sort_keys = ArgBool(a, 3, "sort_keys", false);
  std::string out;
  RETURN_IF_ERROR(ToJson(v, opts, in.limits().max_output_bytes, &out));
  return Value(std::move(out));
}

Expected<Value> IndentFilter(const Value& v, const CallArgs& a) {
  const Value* w = a.Get(0, "width");
  std::string pad = "    ";
  if (w && w->is_string())
    pad = w->as_string();
  else if (w && w->is_int())
    pad = std::string(std::clamp<int64_t>(w->as_int(), 0, 256), ' ');
  bool first = ArgBool(a, 1, "first", false);
  bool blank = ArgBool(a, 2, "blank", false);
  // jinja2: (s + "\n").splitlines(), lines after the first get the pad
  // (empty ones only with blank=True), then the first with first=True.
  std::string s = v.Str() + "\n";
  std::vector<std::string_view> lines;
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find('\n', b);
    lines.push_back(std::string_view(s).substr(b, e - b));
    b = e + 1;
  }
  std::string out(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    out += '\n';
    if (blank || !lines[i].empty()) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(std::move(out));
}

}  // namespace

Expected<Value> ApplyFilter(Interpreter& in, std::string_view name, const Value& v,
                            const CallArgs& a) {
  if (name == "default" || name == "d") {
    const Value* dflt = a.Get(0, "default_value");
    bool boolean = ArgBool(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.Truthy())) return dflt ? *dflt : Value("");
    return v;
  }
  if (name == "length" || name == "count") {
    ASSIGN_OR_RETURN(int64_t n, Len(v));
    return Value(n);
  }
  if (name == "string") return Value(v.Str());
  if (name == "safe") return v.is_string() ? v : Value(v.Str());
  if (name == "tojson") return ToJsonFilter(in, v, a);
  if (name == "trim") {
    const Value* chars = a.Get(0, "chars");
    std::optional<std::string> cs;
    if (chars && !chars->is_none()) cs = chars->Str();
    if (v.is_string()) return Value(PyStrip(v.as_string(), true, true, cs));
    return Value(PyStrip(v.Str(), true, true, cs));
  }
  if (name == "upper") return Value(AsciiUpper(v.Str()));
  if (name == "lower") return Value(AsciiLower(v.Str()));
  if (name == "title") return Value(JinjaTitle(v.Str()));
  if (name == "capitalize") {
    std::string s = AsciiLower(v.Str());
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return Value(std::move(s));
  }
  if (name == "replace") {
    CallArgs m;
    for (size_t i = 0; i < a.args.size(); ++i) m.args.push_back(a.args[i]);
    if (const Value* c = a.Kw("count")) m.args.push_back(*c);
    return CallMethod(in, Value(v.Str()), "replace", m);
  }
  if (name == "join") {
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    const Value* sep = a.Get(0, "d");
    const Value* attribute = a.Get(1, "attribute");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i && sep) out += sep->Str();
      Value item = items[i];
      if (attribute && !attribute->is_none()) {
        ASSIGN_OR_RETURN(item, GetPath(item, attribute->Str()));
      }
      out += item.Str();
      if (out.size() > in.limits().max_output_bytes)
        return ResourceExhausted("join result too large");
    }
    return Value(std::move(out));
  }
  if (name == "first" || name == "last") {
    if (v.is_list() && !v.as_list().items.empty()) {
      return name == "first" ? v.as_list().items.front() : v.as_list().items.back();
    }
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    if (items.empty())
      return Value::Undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    if (v.is_list() && !v.as_list().is_tuple) return v;
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    return Value::List(std::move(items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::List({});
    if (!v.is_dict())
      return InvalidArgument("items filter expects a mapping, got {}", v.TypeName());
    std::vector<Value> out;
    for (const auto& [k, val] : v.as_dict().items) out.push_back(Value::List({k, val}, true));
    return Value::List(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) return InvalidArgument("dictsort expects a mapping");
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.as_dict().items) pairs.push_back(Value::List({k, val}, true));
    bool cs = ArgBool(a, 0, "case_sensitive", false);
    const Value* by = a.Get(1, "by");
    bool by_value = by && by->Str() == "value";
    CallArgs sa;
    sa.kwargs = {{"reverse", Value(ArgBool(a, 2, "reverse", false))},
                 {"case_sensitive", Value(cs)},
                 {"attribute", Value(by_value ? "1" : "0")}};
    return SortImpl(in, Value::List(std::move(pairs)), sa);
  }
  if (name == "map") return MapImpl(in, v, a);
  if (name == "select") return SelectImpl(in, v, a, false, true);
  if (name == "reject") return SelectImpl(in, v, a, false, false);
  if (name == "selectattr") return SelectImpl(in, v, a, true, true);
  if (name == "rejectattr") return SelectImpl(in, v, a, true, false);
  if (name == "sort") return SortImpl(in, v, a);
  if (name == "min" || name == "max") return MinMax(v, a, name == "max");
  if (name == "unique") {
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    bool cs = ArgBool(a, 0, "case_sensitive", false);
    const Value* attribute = a.Get(1, "attribute");
    std::vector<Value> keys, out;
    RETURN_IF_ERROR(in.CountIterations(items.size()));
    for (const Value& item : items) {
      ASSIGN_OR_RETURN(Value k, SortKey(item, attribute, cs));
      if (std::none_of(keys.begin(), keys.end(), [&](const Value& x) { return Equals(x, k); })) {
        keys.push_back(k);
        out.push_back(item);
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) return SliceValue(v, Value::None(), Value::None(), Value(-1));
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
  }
  if (name == "sum") {
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
    const Value* attribute = a.Get(0, "attribute");
    const Value* start = a.Get(1, "start");
    Value total = start ? *start : Value(0);
    for (const Value& item : items) {
      Value x = item;
      if (attribute && !attribute->is_none()) {
        ASSIGN_OR_RETURN(x, GetPath(item, attribute->Str()));
      }
      ASSIGN_OR_RETURN(total, ApplyBinary(BinaryOp::kAdd, total, x, in.limits().max_output_bytes));
    }
    return total;
  }
  if (name == "int" || name == "float") {
    const Value* dflt = a.Get(0, "default");
    bool want_int = name == "int";
    Value fallback = dflt ? *dflt : want_int ? Value(0) : Value(0.0);
    double d = 0;
    if (v.is_int() || v.is_bool())
      d = v.as_double();
    else if (v.is_float())
      d = v.as_float();
    else if (v.is_string()) {
      std::string s = PyStrip(v.as_string(), true, true);
      char* end = nullptr;
      if (want_int) {
        errno = 0;
        long long i = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(i));
      }
      if (s.find_first_of("xXpP") != std::string::npos) return fallback;  // no C hex floats
      d = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0') return fallback;
    } else {
      return fallback;
    }
    if (!want_int) return Value(d);
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int() && v.as_int() != INT64_MIN)
      return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    return InvalidArgument("bad operand type for abs(): '{}'", v.TypeName());
  }
  if (name == "round") {
    if (!v.is_number()) return InvalidArgument("round expects a number");
    const Value* p = a.Get(0, "precision");
    const Value* method = a.Get(1, "method");
    int64_t prec = p && p->is_int() ? std::clamp<int64_t>(p->as_int(), -20, 20) : 0;
    std::string m = method ? method->Str() : "common";
    double scale = std::pow(10.0, static_cast<double>(prec));
    double x = v.as_double() * scale;
    x = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value(x / scale);
  }
  if (name == "attr") {
    const Value* n = a.Get(0, "name");
    if (!n) return InvalidArgument("attr needs a name");
    return GetAttr(v, n->Str());
  }
  if (name == "indent") return IndentFilter(v, a);
  if (name == "format") {
    if (!v.is_string()) return InvalidArgument("format filter expects a string");
    Value args = a.kwargs.empty() ? Value::List(a.args, true) : Value::None();
    if (!a.kwargs.empty()) {
      DictData d;
      for (const auto& [k, x] : a.kwargs) d.Set(Value(k), x);
      args = Value::Dict(std::move(d));
    }
    ASSIGN_OR_RETURN(std::string s, PercentFormat(v.as_string(), args));
    return Value(std::move(s));
  }
  if (name == "escape" || name == "e" || name == "forceescape") {
    std::string out;
    for (char c : v.Str()) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out.push_back(c);
      }
    }
    return Value(std::move(out));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : v.Str()) {
      bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value(n);
  }
  if (name == "center") {
    const Value* w = a.Get(0, "width");
    int64_t width = w && w->is_int() ? std::min<int64_t>(w->as_int(), 1 << 20) : 80;
    std::string s = v.Str();
    int64_t len = static_cast<int64_t>(Utf8Length(s));
    if (width <= len) return Value(std::move(s));
    int64_t total = width - len, left = total / 2 + (total & width & 1);
    return Value(std::string(left, ' ') + s + std::string(total - left, ' '));
  }
  return InvalidArgument("no filter named '{}'", name);
}

Expected<bool> ApplyTest(Interpreter& in, std::string_view name, const Value& v,
                         const CallArgs& a) {
  const Value* arg = a.Get(0, "value");
  auto need_arg = [&]() -> Status {
    if (!arg) return InvalidArgument("test '{}' needs an argument", name);
    return Status::Ok();
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    std::string s = v.Str();
    bool cased = false, ok = true;
    for (unsigned char c : s) {
      if (std::isalpha(c)) {
        cased = true;
        if (name == "lower" ? std::isupper(c) : std::islower(c)) ok = false;
      }
    }
    return cased && ok;
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int() && !v.is_bool()) {
      if (v.is_undefined()) return UndefinedError(v);
      return InvalidArgument("test '{}' expects an integer, got {}", name, v.TypeName());
    }
    int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
    if (name == "odd") return x % 2 != 0;
    if (name == "even") return x % 2 == 0;
    RETURN_IF_ERROR(need_arg());
    if (!arg->is_int() || arg->as_int() == 0)
      return InvalidArgument("divisibleby needs a non-zero int");
    return x % arg->as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") {
    RETURN_IF_ERROR(need_arg());
    return Equals(v, *arg);
  }
  if (name == "ne" || name == "!=") {
    RETURN_IF_ERROR(need_arg());
    return !Equals(v, *arg);
  }
  if (name == "in") {
    RETURN_IF_ERROR(need_arg());
    return Contains(*arg, v);
  }
  if (name == "sameas") {
    RETURN_IF_ERROR(need_arg());
    if (v.kind() != arg->kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.is_bool() || v.is_int() || v.is_float() || v.is_string()) return Equals(v, *arg);
    return Equals(v, *arg);
  }
  static constexpr std::pair<std::string_view, CompareOp> kCmp[] = {
      {"lt", CompareOp::kLt},          {"lessthan", CompareOp::kLt}, {"<", CompareOp::kLt},
      {"le", CompareOp::kLe},          {"<=", CompareOp::kLe},       {"gt", CompareOp::kGt},
      {"greaterthan", CompareOp::kGt}, {">", CompareOp::kGt},        {"ge", CompareOp::kGe},
      {">=", CompareOp::kGe}};
  for (const auto& [n, op] : kCmp) {
    if (name == n) {
      RETURN_IF_ERROR(need_arg());
      return ApplyCompare(op, v, *arg);
    }
  }
  if (name == "filter" || name == "test") {
    static constexpr std::string_view kFilters[] = {
        "default", "d",          "length",     "count", "string",      "safe",      "tojson",
        "trim",    "upper",      "lower",      "title", "capitalize",  "replace",   "join",
        "first",   "last",       "list",       "items", "dictsort",    "map",       "select",
        "reject",  "selectattr", "rejectattr", "sort",  "min",         "max",       "unique",
        "reverse", "sum",        "int",        "float", "abs",         "round",     "attr",
        "indent",  "format",     "escape",     "e",     "forceescape", "wordcount", "center"};
    static constexpr std::string_view kTests[] = {
        "defined",  "undefined", "none",   "boolean", "true",     "false",       "integer",
        "float",    "number",    "string", "mapping", "iterable", "sequence",    "callable",
        "escaped",  "lower",     "upper",  "odd",     "even",     "divisibleby", "eq",
        "equalto",  "==",        "ne",     "!=",      "in",       "sameas",      "lt",
        "lessthan", "<",         "le",     "<=",      "gt",       "greaterthan", ">",
        "ge",       ">=",        "filter", "test"};
    if (!v.is_string()) return false;
    const std::string& s = v.as_string();
    if (name == "filter")
      return std::find(std::begin(kFilters), std::end(kFilters), s) != std::end(kFilters);
    return std::find(std::begin(kTests), std::end(kTests), s) != std::end(kTests);
  }
  return InvalidArgument("no test named '{}'", name);
}

}  // namespace brisk::jinja
