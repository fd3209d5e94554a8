// The operations, filters, tests, methods and global functions of the Jinja
// interpreter, with the Python/jinja2 semantics that HF chat templates rely
// on. Split over ops.cc (operators, attribute and item access, globals),
// filters.cc (filters and tests) and methods.cc (str/dict/list methods,
// str.format and % formatting).
#pragma once

#include <string>
#include <string_view>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/utf8.h"
#include "jinja/value.h"
#include "util/status.h"

namespace brisk::jinja {

// obj.name: a dict key or namespace attribute; Undefined when absent. An
// error when obj itself is Undefined.
Expected<Value> GetAttr(const Value& obj, std::string_view name);
// obj[key]: Python indexing (negative list/str indices count from the end);
// Undefined when the key or index is absent.
Expected<Value> GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] on lists and strings; None means omitted.
Expected<Value> SliceValue(const Value& obj, const Value& start, const Value& stop,
                           const Value& step);
Expected<Value> ApplyBinary(BinaryOp op, const Value& a, const Value& b, size_t max_bytes);
Expected<bool> ApplyCompare(CompareOp op, const Value& a, const Value& b);
// Python `item in container`.
Expected<bool> Contains(const Value& container, const Value& item);
// Error for using an Undefined where a value is required.
Status UndefinedError(const Value& v);

Expected<Value> ApplyFilter(Interpreter& in, std::string_view name, const Value& v,
                            const CallArgs& args);
Expected<bool> ApplyTest(Interpreter& in, std::string_view name, const Value& v,
                         const CallArgs& args);

// True when obj.name(...) is a built-in method of obj's type (str, dict, list).
bool HasMethod(const Value& obj, std::string_view name);
Expected<Value> CallMethod(Interpreter& in, const Value& obj, std::string_view name,
                           const CallArgs& args);
// Python `fmt % args` (printf-style: %s %r %d %i %f %x %%).
Expected<std::string> PercentFormat(const std::string& fmt, const Value& args);

// range, namespace, dict, raise_exception, strftime_now.
DictData MakeGlobals();

// Units of work a freshly built value represents (bytes or elements).
uint64_t WorkUnits(const Value& v);

}  // namespace brisk::jinja
