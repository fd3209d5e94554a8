#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/utf8.h"

namespace brisk::jinja {

// ---------------------------------------------------------------- containers

const Value* DictData::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

const Value* DictData::Find(const Value& key) const {
  if (key.is_string()) return Find(std::string_view(key.as_string()));
  for (const auto& [k, v] : items) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

void DictData::Set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::List(std::vector<Value> items, bool is_tuple) {
  ListData l{std::move(items), is_tuple};
  for (const Value& item : l.items) {
    l.depth = std::max(l.depth, item.depth() + 1);
    l.has_namespace = l.has_namespace || item.contains_namespace();
  }
  Value v;
  v.v_ = std::make_shared<const ListData>(std::move(l));
  return v;
}

Value Value::Dict(DictData dict) {
  dict.depth = 1;
  dict.has_namespace = false;
  for (const auto& [k, val] : dict.items) {
    dict.depth = std::max({dict.depth, k.depth() + 1, val.depth() + 1});
    dict.has_namespace = dict.has_namespace || k.contains_namespace() || val.contains_namespace();
  }
  Value v;
  v.v_ = std::make_shared<const DictData>(std::move(dict));
  return v;
}

int Value::depth() const {
  switch (kind()) {
    case Kind::kList: return as_list().depth;
    case Kind::kDict: return as_dict().depth;
    case Kind::kNamespace: {
      int d = 1;
      for (const auto& [k, v] : namespace_attrs().items) d = std::max(d, v.depth() + 1);
      return d;
    }
    default: return 0;
  }
}

bool Value::contains_namespace() const {
  switch (kind()) {
    case Kind::kNamespace: return true;
    case Kind::kList: return as_list().has_namespace;
    case Kind::kDict: return as_dict().has_namespace;
    default: return false;
  }
}

Value Value::Namespace(DictData attrs) {
  Value v;
  v.v_ = NsPtr{std::make_shared<DictData>(std::move(attrs))};
  return v;
}

Value Value::Function(std::shared_ptr<const Callable> fn) {
  Value v;
  v.v_ = std::move(fn);
  return v;
}

namespace {

template <typename Json>
Expected<Value> FromJsonImpl(const Json& j, int depth) {
  if (depth > kMaxValueDepth) {
    return InvalidArgument("context nested deeper than {} levels", kMaxValueDepth);
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        ASSIGN_OR_RETURN(Value v, FromJsonImpl(e, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictData d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        ASSIGN_OR_RETURN(Value v, FromJsonImpl(it.value(), depth + 1));
        d.items.emplace_back(Value(it.key()), std::move(v));
      }
      return Value::Dict(std::move(d));
    }
    default: return Value::None();  // binary / discarded
  }
}

}  // namespace

Expected<Value> Value::FromJson(const nlohmann::json& j) { return FromJsonImpl(j, 0); }
Expected<Value> Value::FromJson(const nlohmann::ordered_json& j) { return FromJsonImpl(j, 0); }

double Value::as_double() const {
  switch (kind()) {
    case Kind::kInt: return static_cast<double>(as_int());
    case Kind::kFloat: return as_float();
    case Kind::kBool: return as_bool() ? 1.0 : 0.0;
    default: return 0.0;
  }
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_float() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !as_list().items.empty();
    case Kind::kDict: return !as_dict().items.empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return as_list().is_tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

// ---------------------------------------------------------------- printing

std::string FormatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "-1.2345e+02".
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, r.ptr - buf);
  bool neg = sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = std::atoi(std::string(sci.substr(e + 1)).c_str());
  // value = 0.DIGITS * 10^decpt; Python's repr switches to exponent form when
  // decpt > 16 or decpt < -3 (float_repr_style 'short', mode 'r').
  int decpt = exp10 + 1;
  std::string out = neg ? "-" : "";
  if (decpt > 16 || decpt < -3) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(decpt - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, decpt);
    out += '.';
    out += digits.substr(decpt);
  }
  return out;
}

namespace {

std::string ReprString(const std::string& s) {
  char quote = '\'';
  if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) quote = '"';
  std::string out(1, quote);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(quote)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\x%02x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string Value::Str() const {
  switch (kind()) {
    case Kind::kUndefined: return "";
    case Kind::kString: return as_string();
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "None";
    case Kind::kBool: return as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(as_int());
    case Kind::kFloat: return FormatFloat(as_float());
    case Kind::kString: return ReprString(as_string());
    case Kind::kList: {
      const ListData& l = as_list();
      std::string out = l.is_tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        out += l.items[i].Repr();
      }
      if (l.is_tuple && l.items.size() == 1) out += ",";
      out += l.is_tuple ? ")" : "]";
      return out;
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      const DictData& d = is_dict() ? as_dict() : namespace_attrs();
      std::string out = is_dict() ? "{" : "<Namespace {";
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        out += d.items[i].first.Repr();
        out += ": ";
        out += d.items[i].second.Repr();
      }
      out += is_dict() ? "}" : "}>";
      return out;
    }
    case Kind::kCallable: return "<function>";
  }
  return "";
}

// ---------------------------------------------------------------- comparison

bool Equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone: return true;
    case K::kString: return a.as_string() == b.as_string();
    case K::kList: {
      const auto& x = a.as_list().items;
      const auto& y = b.as_list().items;
      if (x.size() != y.size() || a.as_list().is_tuple != b.as_list().is_tuple) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      const auto& x = a.as_dict().items;
      const auto& y = b.as_dict();
      if (x.size() != y.items.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = y.Find(k);
        if (!other || !Equals(v, *other)) return false;
      }
      return true;
    }
    case K::kNamespace: return &a.namespace_attrs() == &b.namespace_attrs();
    case K::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

Expected<bool> Less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x < y;
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // code point order
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return InvalidArgument("'<' not supported between instances of '{}' and '{}'", a.TypeName(),
                         b.TypeName());
}

// ---------------------------------------------------------------- JSON

namespace {

void JsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (ensure_ascii && c >= 0x80) {
      size_t len;
      uint32_t cp = Utf8Decode(s, i, &len);
      i += len - 1;
      char b[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(b, sizeof(b), "\\u%04x", cp);
      }
      *out += b;
      continue;
    }
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\u%04x", c);
          *out += b;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& opts, size_t max_bytes, std::string* out)
      : opts_(opts), max_bytes_(max_bytes), out_(out) {}

  Status Write(const Value& v, int depth) {
    if (depth > 512) return InvalidArgument("tojson: value nested too deeply");
    if (out_->size() > max_bytes_)
      return ResourceExhausted("tojson: output over {} bytes", max_bytes_);
    using K = Value::Kind;
    switch (v.kind()) {
      case K::kNone: *out_ += "null"; return Status::Ok();
      case K::kBool: *out_ += v.as_bool() ? "true" : "false"; return Status::Ok();
      case K::kInt: *out_ += std::to_string(v.as_int()); return Status::Ok();
      case K::kFloat: {
        double d = v.as_float();
        if (std::isnan(d))
          *out_ += "NaN";
        else if (std::isinf(d))
          *out_ += d < 0 ? "-Infinity" : "Infinity";
        else
          *out_ += FormatFloat(d);
        return Status::Ok();
      }
      case K::kString: JsonString(v.as_string(), opts_.ensure_ascii, out_); return Status::Ok();
      case K::kList: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          *out_ += "[]";
          return Status::Ok();
        }
        out_->push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) *out_ += opts_.item_separator;
          Newline(depth + 1);
          RETURN_IF_ERROR(Write(items[i], depth + 1));
        }
        Newline(depth);
        out_->push_back(']');
        return Status::Ok();
      }
      case K::kDict: return WriteDict(v.as_dict(), depth);
      default: return InvalidArgument("Object of type {} is not JSON serializable", v.TypeName());
    }
  }

 private:
  Status WriteDict(const DictData& d, int depth) {
    if (d.items.empty()) {
      *out_ += "{}";
      return Status::Ok();
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    entries.reserve(d.items.size());
    for (const auto& [k, val] : d.items) {
      std::string key;
      switch (k.kind()) {
        case Value::Kind::kString: key = k.as_string(); break;
        case Value::Kind::kNone: key = "null"; break;
        case Value::Kind::kBool: key = k.as_bool() ? "true" : "false"; break;
        case Value::Kind::kInt:
        case Value::Kind::kFloat: key = k.Str(); break;
        default:
          return InvalidArgument("keys must be str, int, float, bool or None, not {}",
                                 k.TypeName());
      }
      entries.emplace_back(std::move(key), &val);
    }
    if (opts_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out_->push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) *out_ += opts_.item_separator;
      Newline(depth + 1);
      JsonString(entries[i].first, opts_.ensure_ascii, out_);
      *out_ += opts_.key_separator;
      RETURN_IF_ERROR(Write(*entries[i].second, depth + 1));
    }
    Newline(depth);
    out_->push_back('}');
    return Status::Ok();
  }

  void Newline(int depth) {
    if (!opts_.indent) return;
    out_->push_back('\n');
    for (int i = 0; i < depth; ++i) *out_ += *opts_.indent;
  }

  const JsonOptions& opts_;
  size_t max_bytes_;
  std::string* out_;
};

}  // namespace

Status ToJson(const Value& v, const JsonOptions& opts, size_t max_bytes, std::string* out) {
  return JsonWriter(opts, max_bytes, out).Write(v, 0);
}

}  // namespace brisk::jinja
