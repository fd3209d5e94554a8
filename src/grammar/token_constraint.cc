#include "grammar/token_constraint.h"

#include <utility>

#include "grammar/cfg_matcher.h"
#include "grammar/constraint.h"
#include "grammar/matcher.h"

namespace brisk {
namespace {

// JSON kinds. Save() copies the state aside (buffers reused); Restore()
// swaps it back, so a speculative walk costs one copy.
class JsonConstraint final : public TokenConstraint {
 public:
  explicit JsonConstraint(std::shared_ptr<const CompiledConstraint> c)
      : c_(std::move(c)), m_(&c_->grammar()) {}
  JsonConstraint(std::shared_ptr<const CompiledConstraint> c, const GrammarMatcher& state)
      : c_(std::move(c)) {
    m_.CopyFrom(state);
  }

  bool AdvanceBytes(std::string_view bytes) override { return m_.AdvanceBytes(bytes); }
  bool CanEnd() const override { return m_.CanEnd(); }
  void FillMask(TokenMaskers& maskers, TokenBitmask* out) override {
    maskers.json().Compute(m_, out);
  }
  void Save() override { saved_.CopyFrom(m_); }
  void Restore() override { std::swap(m_, saved_); }
  std::unique_ptr<TokenConstraint> Clone() const override {
    return std::make_unique<JsonConstraint>(c_, m_);
  }

 private:
  std::shared_ptr<const CompiledConstraint> c_;  // owns the grammar m_ points into
  GrammarMatcher m_;
  GrammarMatcher saved_;
};

// Regex, choice and GBNF kinds. The Earley chart is append-only: Save()
// notes its length and Restore() truncates back to it.
class CfgConstraint final : public TokenConstraint {
 public:
  explicit CfgConstraint(std::shared_ptr<const CfgGrammar> g) : m_(std::move(g)) {}
  explicit CfgConstraint(const CfgMatcher& state) { m_.CopyFrom(state); }

  bool AdvanceBytes(std::string_view bytes) override { return m_.AdvanceBytes(bytes); }
  bool CanEnd() const override { return m_.CanEnd(); }
  void FillMask(TokenMaskers& maskers, TokenBitmask* out) override {
    maskers.cfg().Compute(m_, out);
  }
  void Save() override { saved_sets_ = m_.num_sets(); }
  void Restore() override { m_.Rollback(saved_sets_); }
  std::unique_ptr<TokenConstraint> Clone() const override {
    return std::make_unique<CfgConstraint>(m_);
  }

 private:
  CfgMatcher m_;
  size_t saved_sets_ = 1;
};

}  // namespace

TokenMasker& TokenMaskers::json() {
  if (!json_) json_ = std::make_unique<TokenMasker>(trie_);
  return *json_;
}

CfgTokenMasker& TokenMaskers::cfg() {
  if (!cfg_) cfg_ = std::make_unique<CfgTokenMasker>(trie_);
  return *cfg_;
}

std::unique_ptr<TokenConstraint> MakeTokenConstraint(
    std::shared_ptr<const CompiledConstraint> constraint) {
  if (constraint->is_cfg()) return std::make_unique<CfgConstraint>(constraint->cfg);
  return std::make_unique<JsonConstraint>(std::move(constraint));
}

}  // namespace brisk
