// A structured-output constraint as requests carry it: the plain spec (what
// the client asked for: a remote engine can recompile it) and, inside one
// process, the compiled grammar shared by every sequence that uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/cfg.h"
#include "grammar/schema_compiler.h"
#include "util/status.h"

namespace brisk {

struct ConstraintSpec {
  // kJsonObject / kJsonSchema: JSON (schema_compiler.h); kRegex, kChoice,
  // kGrammar: a context-free grammar (cfg.h) from a regex (full match), a
  // list of strings, or GBNF text.
  enum class Kind : uint8_t { kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
  ConstraintSpec() = default;
  ConstraintSpec(Kind kind, std::string schema, std::string separator = "")
      : kind(kind), schema(std::move(schema)), separator(std::move(separator)) {}

  Kind kind = Kind::kJsonObject;
  // kJsonSchema: the schema's JSON text (key order kept); kRegex: the
  // pattern; kChoice: the choices as a JSON array of strings; kGrammar: the
  // GBNF text.
  std::string schema;
  // kJsonSchema only. Non-empty: the text is one or more values of the
  // schema separated by these bytes, without brackets (several tool calls
  // under tool_choice "auto" with a call marker: server/openai_tools.h).
  std::string separator;
  // With a separator: the text may also end after this many of its bytes
  // (ArraySpec::separator_end); 0 = only where a value ends.
  uint32_t separator_end = 0;
};

// "json_object", "json_schema", "regex", "choice", "grammar".
const char* ConstraintKindName(ConstraintSpec::Kind kind);

struct CompiledConstraint {
  ConstraintSpec spec;
  CompiledSchema compiled;  // JSON kinds: grammar + keywords not enforced
  // Regex, choice and GBNF kinds: the grammar (null for the JSON kinds).
  std::shared_ptr<const CfgGrammar> cfg;
  double compile_s = 0;  // how long the compile took

  bool is_cfg() const { return cfg != nullptr; }
  const JsonGrammar& grammar() const { return compiled.grammar; }
  // "keyword@pointer" for each keyword not enforced.
  std::vector<std::string> UnenforcedList() const;
};

// Compiles `spec` (InvalidArgument for a schema that is not one, an
// invalid or unsupported regex, GBNF with an error, a choice list that is
// not a non-empty JSON array of strings).
Expected<std::shared_ptr<const CompiledConstraint>> CompileConstraint(const ConstraintSpec& spec);

// Compiled constraints by content (kind + schema text), least recently used
// evicted past `capacity`. Thread-safe; a compile runs outside the lock (two
// threads missing on the same schema at once both compile it).
class ConstraintCache {
 public:
  explicit ConstraintCache(size_t capacity = 64) : capacity_(capacity) {}

  // *hit (optional): whether it came from the cache.
  Expected<std::shared_ptr<const CompiledConstraint>> Get(const ConstraintSpec& spec,
                                                          bool* hit = nullptr);
  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledConstraint>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace brisk
