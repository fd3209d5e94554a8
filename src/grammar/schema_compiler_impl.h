// The JSON Schema compiler's internals (schema_compiler.h is the API): the
// Compiler class, shared by schema_compiler.cc (keywords, $ref, unions,
// literals) and schema_compiler_values.cc (strings, numbers, objects,
// arrays).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/schema_compiler.h"

namespace brisk::schema_internal {

using Json = nlohmann::ordered_json;

class Compiler {
 public:
  Compiler(const Json& root, const CompileOptions& opt) : root_(root), opt_(opt) {}

  Expected<CompiledSchema> Run() {
    const uint32_t root = Compile(root_, "", 0);
    if (!error_.ok()) return error_;
    out_.grammar.root = root;
    return std::move(out_);
  }

 private:
  void Report(const std::string& keyword, const std::string& ptr) {
    if (reported_.emplace(keyword, ptr).second) out_.unenforced.push_back({keyword, ptr});
  }
  uint32_t Fail(std::string msg) {
    if (error_.ok()) error_ = InvalidArgument("{}", msg);
    return out_.grammar.AddNode({});
  }
  uint32_t Never() { return out_.grammar.AddNode({}); }

  uint32_t Compile(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileRef(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileAlternatives(const Json& s, const char* key, const std::string& ptr, int depth);
  uint32_t CompileLiterals(const Json& s, const std::string& ptr);
  uint32_t CompileType(const std::string& type, const Json& s, const std::string& ptr, int depth);
  uint32_t CompileObject(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileArray(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileNumber(bool integer, const Json& s, const std::string& ptr);
  // patternProperties into `spec`; false where it cannot be enforced (the
  // caller reports it).
  bool CompilePatternProperties(const Json& s, const std::string& ptr, int depth, ObjectSpec* spec);
  uint32_t CompileString(const Json& s, const std::string& ptr);
  bool ReadCount(const Json& s, const char* key, const std::string& ptr, uint32_t* out);
  // The schema a local "$ref" points at, or nullptr.
  const Json* Resolve(const std::string& ref) const;

  const Json& root_;
  const CompileOptions& opt_;
  CompiledSchema out_;
  Status error_;
  std::map<std::string, uint32_t> refs_;                    // resolved pointer -> alias node
  std::set<std::pair<std::string, std::string>> reported_;  // (keyword, pointer)
  // String schemas with a pattern or format: node and keywords left out.
  std::map<std::string, std::pair<uint32_t, std::vector<std::string>>> strings_;
};

// JSON pointers of children: ptr/a and ptr/a/i.
std::string Child(const std::string& ptr, std::string_view a);
std::string Child(const std::string& ptr, std::string_view a, size_t i);

}  // namespace brisk::schema_internal
