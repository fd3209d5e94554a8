#include "grammar/constraint.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/regex_grammar.h"

namespace brisk {
namespace {

Expected<std::shared_ptr<const CfgGrammar>> CompileChoiceJson(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty())
    return InvalidArgument("the choices must be a non-empty array of strings");
  std::vector<std::string> choices;
  for (const auto& v : j) {
    if (!v.is_string()) return InvalidArgument("the choices must be a non-empty array of strings");
    choices.push_back(v.get<std::string>());
  }
  return CompileChoice(choices);
}

}  // namespace

const char* ConstraintKindName(ConstraintSpec::Kind kind) {
  switch (kind) {
    case ConstraintSpec::Kind::kJsonObject: return "json_object";
    case ConstraintSpec::Kind::kJsonSchema: return "json_schema";
    case ConstraintSpec::Kind::kRegex: return "regex";
    case ConstraintSpec::Kind::kChoice: return "choice";
    case ConstraintSpec::Kind::kGrammar: return "grammar";
  }
  return "unknown";
}

std::vector<std::string> CompiledConstraint::UnenforcedList() const {
  std::vector<std::string> out;
  out.reserve(compiled.unenforced.size());
  for (const auto& u : compiled.unenforced) out.push_back(u.ToString());
  return out;
}

Expected<std::shared_ptr<const CompiledConstraint>> CompileConstraint(const ConstraintSpec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  auto c = std::make_shared<CompiledConstraint>();
  c->spec = spec;
  using Kind = ConstraintSpec::Kind;
  if (spec.kind == Kind::kJsonObject) {
    c->compiled = CompileAnyJsonObject();
  } else if (spec.kind == Kind::kJsonSchema) {
    auto compiled = CompileJsonSchemaText(spec.schema);
    if (!compiled.ok()) return compiled.status();
    c->compiled = std::move(compiled).value();
    if (!spec.separator.empty()) {
      JsonGrammar& g = c->compiled.grammar;
      ArraySpec seq;
      seq.items = g.root;
      seq.min_items = 1;
      seq.separator = spec.separator;
      seq.separator_end = spec.separator_end < spec.separator.size() ? spec.separator_end : 0;
      g.root = g.AddArray(std::move(seq));
    }
  } else {
    auto cfg = spec.kind == Kind::kRegex     ? CompileRegex(spec.schema)
               : spec.kind == Kind::kGrammar ? CompileGbnf(spec.schema)
                                             : CompileChoiceJson(spec.schema);
    if (!cfg.ok()) return cfg.status();
    c->cfg = std::move(cfg).value();
  }
  c->compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const CompiledConstraint>(std::move(c));
}

Expected<std::shared_ptr<const CompiledConstraint>> ConstraintCache::Get(const ConstraintSpec& spec,
                                                                         bool* hit) {
  // The key is the content itself (kind byte + schema text [+ NUL + separator]): no hash
  // collision can hand out the wrong grammar; the map hashes it.
  std::string key(1, static_cast<char>(spec.kind));
  key += spec.schema;
  if (!spec.separator.empty()) {  // schema text is JSON: a NUL cannot occur in it
    key += '\0';
    key += spec.separator;
    key += '\0';
    key += std::to_string(spec.separator_end);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      if (hit) *hit = true;
      return it->second->second;
    }
  }
  if (hit) *hit = false;
  auto compiled = CompileConstraint(spec);
  if (!compiled.ok()) return compiled.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(key, *compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return *compiled;
}

size_t ConstraintCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace brisk
