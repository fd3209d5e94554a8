// Runtime values of the Jinja interpreter (interpreter.h), with the Python
// semantics Jinja templates are written against: str() and repr() text,
// truthiness, ==, ordering, len(), and json.dumps as HF transformers calls it
// (ensure_ascii=False). Lists and dicts are immutable once built, as in HF's
// ImmutableSandboxedEnvironment; only namespace() objects mutate, and they are
// shared by reference like Python objects.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/status.h"

namespace brisk::jinja {

class Value;
struct Callable;  // interpreter.h

// Deepest nesting of lists/dicts a value may have (JSON context or built by
// a template). Keeps every recursive walk (printing, ==, tojson, destruction)
// shallow.
inline constexpr int kMaxValueDepth = 128;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes how it prints: (1, 2) vs [1, 2]
  // Set by Value::List: 1 + deepest item, and whether a namespace is inside.
  int depth = 1;
  bool has_namespace = false;
};

// Insertion-ordered mapping. Keys are usually strings (JSON objects); literal
// dicts may use other scalars.
struct DictData {
  std::vector<std::pair<Value, Value>> items;

  const Value* Find(const Value& key) const;
  const Value* Find(std::string_view key) const;
  // Replaces the value of an existing key or appends.
  void Set(Value key, Value value);

  // Set by Value::Dict (not maintained for namespace attributes).
  int depth = 1;
  bool has_namespace = false;
};

// The marker for "no such variable/attribute". Renders empty, iterates empty,
// is falsy; any other use (attribute, call, arithmetic) is an error naming
// `hint`, like jinja2.Undefined.
struct UndefinedData {
  std::string hint;  // "'x' is undefined"
};
struct NoneData {};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable,
  };

  Value() : v_(UndefinedData{}) {}
  Value(bool b) : v_(b) {}  // NOLINT: implicit by design
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(const char* s) : Value(std::string(s)) {}

  static Value Undefined(std::string hint) { return Value(UndefinedData{std::move(hint)}); }
  static Value None() { return Value(NoneData{}); }
  static Value List(std::vector<Value> items, bool is_tuple = false);
  static Value Dict(DictData dict);
  static Value Namespace(DictData attrs);
  static Value Function(std::shared_ptr<const Callable> fn);

  // JSON -> Value: null -> None, objects keep their key order (ordered_json
  // keeps insertion order; plain nlohmann::json is sorted by key). Nesting
  // past kMaxValueDepth is an error.
  static Expected<Value> FromJson(const nlohmann::json& j);
  static Expected<Value> FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // Numeric value of an int, float or bool.
  double as_double() const;
  const std::string& as_string() const { return *std::get<StrPtr>(v_); }
  const ListData& as_list() const { return *std::get<ListPtr>(v_); }
  const DictData& as_dict() const { return *std::get<DictPtr>(v_); }
  // Namespaces are mutable through any copy of the Value.
  DictData& namespace_attrs() const { return *std::get<NsPtr>(v_).p; }
  const Callable& as_callable() const { return *std::get<FnPtr>(v_); }
  const std::string& undefined_hint() const { return std::get<UndefinedData>(v_).hint; }

  // Nesting depth: 0 for scalars, 1 + deepest element for containers.
  int depth() const;
  // True for a namespace and for containers holding one.
  bool contains_namespace() const;

  // Python bool(x).
  bool Truthy() const;
  // Python str(x); Undefined is "".
  std::string Str() const;
  // Python repr(x) (how list and dict elements print).
  std::string Repr() const;
  // Python type name for messages: 'int', 'str', 'NoneType', ...
  const char* TypeName() const;

 private:
  using StrPtr = std::shared_ptr<const std::string>;  // copies share the bytes
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  struct NsPtr {
    std::shared_ptr<DictData> p;
  };
  using FnPtr = std::shared_ptr<const Callable>;
  explicit Value(UndefinedData u) : v_(std::move(u)) {}
  explicit Value(NoneData n) : v_(n) {}

  std::variant<UndefinedData, NoneData, bool, int64_t, double, StrPtr, ListPtr, DictPtr, NsPtr,
               FnPtr>
      v_;
};

// Python ==. Numbers compare by value across int/float/bool.
bool Equals(const Value& a, const Value& b);
// Python <; an error for unorderable types.
Expected<bool> Less(const Value& a, const Value& b);

// Python repr(float): shortest round-trip digits, "1.0", "1e+16", "inf".
std::string FormatFloat(double d);

struct JsonOptions {
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_separator = ", ";  // ", " or "," with indent (Python default)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs)
};
// json.dumps(v, ensure_ascii=False, ...). Undefined, namespaces and callables
// are not serializable; output stops growing past max_bytes (an error).
Status ToJson(const Value& v, const JsonOptions& opts, size_t max_bytes, std::string* out);

}  // namespace brisk::jinja
