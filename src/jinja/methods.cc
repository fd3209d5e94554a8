// Python methods of str, dict and list values, str.format and `%`
// formatting (builtins.h). Mutating methods are refused, as HF's
// ImmutableSandboxedEnvironment does.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "jinja/builtins.h"

namespace brisk::jinja {
namespace {

constexpr std::string_view kStrMethods[] = {
    "strip",      "lstrip",  "rstrip",  "startswith",   "endswith",     "split",   "rsplit",
    "splitlines", "upper",   "lower",   "title",        "capitalize",   "replace", "find",
    "rfind",      "count",   "join",    "format",       "isdigit",      "isalpha", "isalnum",
    "isspace",    "islower", "isupper", "removeprefix", "removesuffix", "swapcase"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"index", "count"};
constexpr std::string_view kMutators[] = {"append", "extend",     "insert", "pop",
                                          "remove", "clear",      "sort",   "reverse",
                                          "update", "setdefault", "popitem"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

Expected<std::string> StrArg(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.Get(i, name);
  if (!v || !v->is_string()) return InvalidArgument("{}() argument must be str", method);
  return v->as_string();
}

// Python str.split / rsplit.
std::vector<Value> Split(const std::string& s, const Value* sep, int64_t maxsplit, bool right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {
    // Runs of whitespace; no empty strings.
    std::vector<size_t> offs = Utf8Offsets(s);
    std::vector<std::pair<size_t, size_t>> words;  // byte ranges
    size_t n = offs.size() - 1, i = 0;
    auto ws = [&](size_t k) {
      size_t len;
      return IsPyWhitespace(Utf8Decode(s, offs[k], &len));
    };
    while (i < n) {
      while (i < n && ws(i)) ++i;
      if (i >= n) break;
      size_t b = i;
      while (i < n && !ws(i)) ++i;
      words.emplace_back(offs[b], offs[i]);
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (!right) {
        size_t keep = static_cast<size_t>(maxsplit);
        std::string rest = PyStrip(std::string_view(s).substr(words[keep].first), false, true);
        words.resize(keep);
        for (auto& [b, e] : words) parts.push_back(s.substr(b, e - b));
        parts.push_back(rest);
      } else {
        size_t first_kept = words.size() - static_cast<size_t>(maxsplit);
        parts.push_back(
            PyStrip(std::string_view(s).substr(0, words[first_kept - 1].second), true, false));
        for (size_t k = first_kept; k < words.size(); ++k) {
          parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
        }
      }
    } else {
      for (auto& [b, e] : words) parts.push_back(s.substr(b, e - b));
    }
  } else {
    const std::string& d = sep->as_string();
    if (!right) {
      size_t b = 0;
      int64_t done = 0;
      while (maxsplit < 0 || done < maxsplit) {
        size_t e = s.find(d, b);
        if (e == std::string::npos) break;
        parts.push_back(s.substr(b, e - b));
        b = e + d.size();
        ++done;
      }
      parts.push_back(s.substr(b));
    } else {
      size_t e = s.size();
      int64_t done = 0;
      std::vector<std::string> rev;
      while ((maxsplit < 0 || done < maxsplit) && e >= d.size()) {
        size_t p = s.rfind(d, e - d.size());
        if (p == std::string::npos) break;
        rev.push_back(s.substr(p + d.size(), e - p - d.size()));
        e = p;
        ++done;
      }
      rev.push_back(s.substr(0, e));
      parts.assign(rev.rbegin(), rev.rend());
    }
  }
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

std::string PyTitle(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalpha(c)) {
      out.push_back(static_cast<char>(prev_cased ? std::tolower(c) : std::toupper(c)));
      prev_cased = true;
    } else {
      out.push_back(ch);
      prev_cased = false;
    }
  }
  return out;
}

template <typename Pred>
bool AllChars(const std::string& s, Pred p) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return p(static_cast<unsigned char>(c)); });
}

// str.format: {} {0} {name} with optional !r/!s; no format specs.
Expected<std::string> StrFormat(const std::string& f, const CallArgs& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}')
        ++i;
      else
        return InvalidArgument("Single '}}' encountered in format string");
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    size_t e = f.find('}', i);
    if (e == std::string::npos) return InvalidArgument("Single '{{' encountered in format string");
    std::string field = f.substr(i + 1, e - i - 1);
    i = e;
    char conv = 0;
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conv = bang + 1 < field.size() ? field[bang + 1] : 0;
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) {
      return InvalidArgument("str.format: format specs are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_idx < a.args.size() ? &a.args[auto_idx] : nullptr;
      ++auto_idx;
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t k = 0;
      auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), k);
      v = ec == std::errc() && k < a.args.size() ? &a.args[k] : nullptr;
    } else {
      v = a.Kw(field);
    }
    if (!v) return InvalidArgument("str.format: missing argument '{}'", field);
    out += conv == 'r' ? v->Repr() : v->Str();
  }
  return out;
}

}  // namespace

bool HasMethod(const Value& obj, std::string_view name) {
  if (obj.is_string()) return In(kStrMethods, name);
  if (obj.is_dict()) return In(kDictMethods, name) || In(kMutators, name);
  if (obj.is_list()) return In(kListMethods, name) || In(kMutators, name);
  return false;
}

Expected<Value> CallMethod(Interpreter& in, const Value& obj, std::string_view name,
                           const CallArgs& a) {
  if (In(kMutators, name)) {
    return InvalidArgument("access to attribute '{}' of '{}' object is unsafe.", name,
                           obj.TypeName());
  }
  if (obj.is_dict()) {
    const DictData& d = obj.as_dict();
    if (name == "get") {
      const Value* key = a.Get(0, "key");
      if (!key) return InvalidArgument("get expected at least 1 argument");
      if (const Value* v = d.Find(*key)) return *v;
      const Value* dflt = a.Get(1, "default");
      return dflt ? *dflt : Value::None();
    }
    std::vector<Value> out;
    out.reserve(d.items.size());
    for (const auto& [k, v] : d.items) {
      if (name == "items")
        out.push_back(Value::List({k, v}, true));
      else
        out.push_back(name == "keys" ? k : v);
    }
    return Value::List(std::move(out));
  }
  if (obj.is_list()) {
    const Value* x = a.Get(0, "value");
    if (!x) return InvalidArgument("{}() takes exactly one argument", name);
    const auto& items = obj.as_list().items;
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Equals(items[i], *x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index") return InvalidArgument("{} is not in list", x->Repr());
    return Value(count);
  }
  const std::string& s = obj.as_string();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.Get(0, "chars");
    std::optional<std::string> cs;
    if (chars && !chars->is_none()) cs = chars->Str();
    return Value(PyStrip(s, name != "rstrip", name != "lstrip", cs));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* p = a.Get(0, "prefix");
    if (!p) return InvalidArgument("{}() takes at least 1 argument", name);
    std::vector<Value> options = p->is_list() ? p->as_list().items : std::vector<Value>{*p};
    for (const Value& o : options) {
      if (!o.is_string()) return InvalidArgument("{}() arg must be str or a tuple of str", name);
      const std::string& t = o.as_string();
      bool hit = name == "startswith"
                     ? s.compare(0, t.size(), t) == 0
                     : s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
      if (hit) return Value(true);
    }
    return Value(false);
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = a.Get(0, "sep");
    const Value* maxsplit = a.Get(1, "maxsplit");
    if (sep && !sep->is_none() && (!sep->is_string() || sep->as_string().empty())) {
      return InvalidArgument("empty or non-string separator");
    }
    int64_t ms = maxsplit && maxsplit->is_int() ? maxsplit->as_int() : -1;
    RETURN_IF_ERROR(in.CountIterations(1));
    return Value::List(Split(s, sep, ms, name == "rsplit"));
  }
  if (name == "splitlines") {
    bool keep = a.Get(0, "keepends") && a.Get(0, "keepends")->Truthy();
    std::vector<Value> out;
    size_t b = 0;
    while (b < s.size()) {
      size_t e = s.find_first_of("\n\r", b);
      if (e == std::string::npos) {
        out.emplace_back(s.substr(b));
        break;
      }
      size_t nl = (s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1;
      out.emplace_back(s.substr(b, e - b + (keep ? nl : 0)));
      b = e + nl;
    }
    return Value::List(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "swapcase") {
    std::string r = s;
    for (char& c : r) {
      unsigned char u = static_cast<unsigned char>(c);
      if (name == "upper")
        c = static_cast<char>(std::toupper(u));
      else if (name == "lower")
        c = static_cast<char>(std::tolower(u));
      else
        c = static_cast<char>(std::isupper(u) ? std::tolower(u) : std::toupper(u));
    }
    return Value(std::move(r));
  }
  if (name == "title") return Value(PyTitle(s));
  if (name == "capitalize") {
    std::string r = s;
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
    return Value(std::move(r));
  }
  if (name == "replace") {
    ASSIGN_OR_RETURN(std::string from, StrArg(a, 0, "old", "replace"));
    ASSIGN_OR_RETURN(std::string to, StrArg(a, 1, "new", "replace"));
    const Value* cnt = a.Get(2, "count");
    int64_t limit = cnt && cnt->is_int() ? cnt->as_int() : -1;
    std::string out;
    int64_t done = 0;
    size_t b = 0;
    if (from.empty()) {
      // Python inserts `to` between every code point (and at both ends).
      std::vector<size_t> offs = Utf8Offsets(s);
      for (size_t i = 0; i + 1 < offs.size() + 1; ++i) {
        if (limit < 0 || done < limit) {
          out += to;
          ++done;
        }
        if (i + 1 < offs.size()) out.append(s, offs[i], offs[i + 1] - offs[i]);
        if (out.size() > in.limits().max_output_bytes)
          return ResourceExhausted("replace result too large");
      }
      return Value(std::move(out));
    }
    while (limit < 0 || done < limit) {
      size_t e = s.find(from, b);
      if (e == std::string::npos) break;
      out.append(s, b, e - b);
      out += to;
      b = e + from.size();
      ++done;
      if (out.size() > in.limits().max_output_bytes)
        return ResourceExhausted("replace result too large");
    }
    out.append(s, b);
    return Value(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    ASSIGN_OR_RETURN(std::string sub, StrArg(a, 0, "sub", std::string(name).c_str()));
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(Utf8Length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) return Value(-1);
    return Value(static_cast<int64_t>(Utf8Length(std::string_view(s).substr(0, p))));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ASSIGN_OR_RETURN(std::string t, StrArg(a, 0, "prefix", std::string(name).c_str()));
    if (name == "removeprefix" && s.compare(0, t.size(), t) == 0) return Value(s.substr(t.size()));
    if (name == "removesuffix" && s.size() >= t.size() &&
        s.compare(s.size() - t.size(), t.size(), t) == 0) {
      return Value(s.substr(0, s.size() - t.size()));
    }
    return obj;
  }
  if (name == "join") {
    const Value* it = a.Get(0, "iterable");
    if (!it) return InvalidArgument("join() takes exactly one argument");
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(*it));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return InvalidArgument("sequence item {}: expected str instance, {} found", i,
                               items[i].TypeName());
      }
      if (i) out += s;
      out += items[i].as_string();
      if (out.size() > in.limits().max_output_bytes)
        return ResourceExhausted("join result too large");
    }
    return Value(std::move(out));
  }
  if (name == "format") {
    ASSIGN_OR_RETURN(std::string r, StrFormat(s, a));
    return Value(std::move(r));
  }
  if (name == "isdigit")
    return Value(AllChars(s, [](unsigned char c) { return std::isdigit(c) != 0; }));
  if (name == "isalpha")
    return Value(AllChars(s, [](unsigned char c) { return std::isalpha(c) != 0; }));
  if (name == "isalnum")
    return Value(AllChars(s, [](unsigned char c) { return std::isalnum(c) != 0; }));
  if (name == "isspace") return Value(!s.empty() && PyStrip(s, true, true).empty());
  if (name == "islower" || name == "isupper") {
    bool cased = false, ok = true;
    for (unsigned char c : s) {
      if (!std::isalpha(c)) continue;
      cased = true;
      if (name == "islower" ? std::isupper(c) : std::islower(c)) ok = false;
    }
    return Value(cased && ok);
  }
  return InvalidArgument("'str' object has no attribute '{}'", name);
}

Expected<std::string> PercentFormat(const std::string& f, const Value& args) {
  std::vector<Value> positional;
  const DictData* mapping = args.is_dict() ? &args.as_dict() : nullptr;
  if (args.is_list() && args.as_list().is_tuple)
    positional = args.as_list().items;
  else if (!mapping)
    positional = {args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) return InvalidArgument("incomplete format");
    const Value* v = nullptr;
    if (f[i] == '(') {
      size_t e = f.find(')', i);
      if (e == std::string::npos || !mapping) return InvalidArgument("format requires a mapping");
      v = mapping->Find(std::string_view(f).substr(i + 1, e - i - 1));
      if (!v) return InvalidArgument("format: missing key '{}'", f.substr(i + 1, e - i - 1));
      i = e + 1;
    }
    std::string spec = "%";
    int digits_run = 0;
    while (i < f.size() && std::strchr("-+ #0123456789.", f[i])) {
      digits_run = std::isdigit(static_cast<unsigned char>(f[i])) ? digits_run + 1 : 0;
      if (digits_run > 3) return InvalidArgument("format width or precision too large");
      spec.push_back(f[i++]);
    }
    if (i >= f.size()) return InvalidArgument("incomplete format");
    char type = f[i];
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    if (!v) {
      if (next >= positional.size())
        return InvalidArgument("not enough arguments for format string");
      v = &positional[next++];
    }
    char buf[512];
    switch (type) {
      case 's':
      case 'r': {
        std::string s = type == 'r' ? v->Repr() : v->Str();
        if (spec.size() == 1) {
          out += s;
        } else {
          std::snprintf(buf, sizeof(buf), (spec + "s").c_str(), s.c_str());
          out += buf;
        }
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!v->is_number()) return InvalidArgument("%{} format: a real number is required", type);
        long long n = v->is_float()
                          ? static_cast<long long>(v->as_float())
                          : static_cast<long long>(v->is_bool() ? v->as_bool() : v->as_int());
        std::snprintf(buf, sizeof(buf), (spec + "ll" + (type == 'i' ? 'd' : type)).c_str(), n);
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!v->is_number()) return InvalidArgument("must be real number, not {}", v->TypeName());
        std::snprintf(buf, sizeof(buf), (spec + type).c_str(), v->as_double());
        out += buf;
        break;
      default: return InvalidArgument("unsupported format character '{}'", type);
    }
  }
  if (!mapping && next < positional.size()) {
    return InvalidArgument("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace brisk::jinja
